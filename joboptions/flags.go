package joboptions

import (
	"errors"
	"flag"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// RegisterFlags defines a flag on fs for every option, so that a Go
// pipeline run with --runner=weir accepts --weir_...: the Go SDK sends every
// flag set on the command line as a pipeline option, as the text given. A
// flag checks its value as Parse would, so a bad one fails the Go program
// before it submits.
func RegisterFlags(fs *flag.FlagSet) {
	for i := range declared {
		d := &declared[i]
		fs.Var(&flagValue{opt: d}, d.Name, "weir: "+d.Usage+" (default "+d.DefaultText()+")")
	}
}

// flagValue is one option's flag. Its text is what the Go SDK sends.
type flagValue struct {
	opt *Option
	v   string
}

func (f *flagValue) String() string {
	if f == nil || f.opt == nil {
		return "" // flag.isZeroValue asks a zero flagValue
	}
	return f.v
}

func (f *flagValue) Set(s string) error {
	v, err := f.opt.parseText(s)
	if err == nil && f.opt.check != nil {
		if why := f.opt.check(v); why != "" {
			err = errors.New(why)
		}
	}
	if err != nil && s != "" {
		return err
	}
	f.v = s
	return nil
}

// IsBoolFlag lets a bool option be given bare: --weir_restore means true.
func (f *flagValue) IsBoolFlag() bool { return f.opt != nil && f.opt.Kind == Bool }

// Describe returns the options as the job service's
// DescribePipelineOptions publishes them.
//
// Every option but the whole numbers is described as a STRING, booleans
// included: Python's PortableRunner turns a BOOLEAN option into a
// store_true (or, with default "true", store_false) argparse flag, which
// refuses --weir_combine_lifting=false ("ignored explicit argument") and
// sends false for every job that does not set it, overriding the server's
// defaults. As a STRING, --weir_combine_lifting=false arrives as "false",
// and an option not given is not sent. INTEGER is kept for whole numbers:
// Python parses them with int and sends their text (BEAM-5509).
func Describe() []*jobpb.PipelineOptionDescriptor {
	var out []*jobpb.PipelineOptionDescriptor
	for i := range declared {
		d := &declared[i]
		typ := jobpb.PipelineOptionType_STRING
		if d.Kind == Int {
			typ = jobpb.PipelineOptionType_INTEGER
		}
		out = append(out, &jobpb.PipelineOptionDescriptor{
			Name:         d.Name,
			Type:         typ,
			Description:  "weir: " + d.Usage + " (" + d.Kind.String() + ", default " + d.DefaultText() + ")",
			DefaultValue: d.Default,
			Group:        "weir",
		})
	}
	return out
}
