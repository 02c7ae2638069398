package joboptions

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/protobuf/types/known/structpb"
)

// javaPath is the Java interface generated from the declaration, so that
// Java pipelines set weir's options as flags (--weirCheckpointInterval=10s).
const javaPath = "../java/src/main/java/org/weir/runner/WeirPipelineOptions.java"

// javaName is an option's property name in Java: weir_checkpoint_interval
// is weirCheckpointInterval, the getter getWeirCheckpointInterval.
func javaName(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// javaKey is what Beam's Java SDK sends for a property (PipelineOptionsTranslation
// .toProto: Guava's LOWER_CAMEL to LOWER_UNDERSCORE, in beam:option:…:v1).
func javaKey(property string) string {
	var b strings.Builder
	for _, r := range property {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return "beam:option:" + b.String() + ":v1"
}

// javaType is the Java type of an option's value: Jackson sends Boolean
// and Long as JSON booleans and numbers, which Parse takes; durations,
// enums, mappings and paths are text as the Go flags take them.
func javaType(k Kind) string {
	switch k {
	case Bool:
		return "Boolean"
	case Int:
		return "Long"
	}
	return "String"
}

var flagRE = regexp.MustCompile(`--(weir_[a-z_]+)`)

// javaSource renders WeirPipelineOptions.java. The getters have no
// @Default: an option a job does not set is sent as null, so the server's
// default applies, as for Go and Python.
func javaSource() string {
	var b strings.Builder
	b.WriteString(`// Code generated from joboptions/declare.go by ` + "`go test ./joboptions -rewrite`" + `. DO NOT EDIT.

package org.weir.runner;

import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;

/**
 * weir's job options, as flags of a Java pipeline: {@code --weirCheckpointInterval=10s}. Each is
 * sent to the job service as {@code beam:option:weir_checkpoint_interval:v1}, the name the Go and
 * Python SDKs use; the server checks the values when the job is submitted and refuses the job,
 * naming the option, when one does not fit. An option left unset takes the server's default
 * (docs/options.md).
 */
@Description("weir's job options (docs/options.md)")
public interface WeirPipelineOptions extends PipelineOptions {
`)
	for _, d := range All() {
		prop := javaName(d.Name)
		get := strings.ToUpper(prop[:1]) + prop[1:]
		usage := flagRE.ReplaceAllStringFunc(d.Usage, func(f string) string { return "--" + javaName(f[2:]) })
		desc := fmt.Sprintf("%s (%s; default: %s)", usage, d.Kind, d.DefaultText())
		typ := javaType(d.Kind)
		fmt.Fprintf(&b, "\n  /** {@code --%s}: %s. */\n", prop, strings.ReplaceAll(usage, "*/", "* /"))
		fmt.Fprintf(&b, "  @Description(%s)\n", strconv.Quote(desc))
		fmt.Fprintf(&b, "  %s get%s();\n\n", typ, get)
		fmt.Fprintf(&b, "  void set%s(%s value);\n", get, typ)
	}
	b.WriteString("}\n")
	return b.String()
}

// TestJavaOptionsCurrent keeps the committed Java interface the
// declaration's.
func TestJavaOptionsCurrent(t *testing.T) {
	want := javaSource()
	got, err := os.ReadFile(javaPath)
	if err == nil && string(got) == want {
		return
	}
	if *rewrite {
		if err := os.WriteFile(javaPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("%s is not the declaration's; run go test ./joboptions -rewrite", javaPath)
}

// TestJavaNamesRoundTrip: the key Java sends for each generated property
// is the option's own name, so Parse needs no Java spelling.
func TestJavaNamesRoundTrip(t *testing.T) {
	for _, d := range All() {
		if got, want := javaKey(javaName(d.Name)), "beam:option:"+d.Name+":v1"; got != want {
			t.Errorf("%s: Java sends %s, want %s", d.Name, got, want)
		}
	}
}

// TestParseJavaForm parses options as Beam's Java SDK sends them: every
// property the pipeline's interfaces know, under beam:option:NAME:v1, with
// Jackson's JSON types (Long as a number, Boolean as a boolean) and null
// for properties read but not set.
func TestParseJavaForm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fields  map[string]any
		check   func(*Options) string
		wantErr string
	}{{
		name: "set",
		fields: map[string]any{
			"beam:option:weir_checkpoint_interval:v1":           "10s",
			"beam:option:weir_checkpoint_mode:v1":               "unaligned",
			"beam:option:weir_max_bundle_bytes:v1":              float64(1 << 20),
			"beam:option:weir_combine_lifting:v1":               false,
			"beam:option:weir_savepoint_rename:v1":              nil,
			"beam:option:weir_dead_letter:v1":                   nil,
			"beam:option:job_name:v1":                           "wordcount-root-1201193501-8c1f2a",
			"beam:option:runner:v1":                             "org.weir.runner.WeirRunner",
			"beam:option:default_environment_type:v1":           "LOOPBACK",
			"beam:option:files_to_stage:v1":                     []any{"/tmp/a.jar", "/tmp/b.jar"},
			"beam:option:options_id:v1":                         float64(3),
			"beam:option:stable_unique_names:v1":                "WARNING",
			"beam:option:weir_checkpoint_keep:v1":               nil,
			"beam:option:weir_adaptive_precombine:v1":           true,
			"beam:option:weir_checkpoint_tolerable_failures:v1": float64(2),
		},
		check: func(o *Options) string {
			if o.CheckpointInterval.String() != "10s" || o.CheckpointMode != ModeUnaligned ||
				o.MaxBundleBytes != 1<<20 || o.CombineLifting || !o.AdaptivePrecombine ||
				o.CheckpointTolerableFailures != 2 || o.JobName != "wordcount-root-1201193501-8c1f2a" ||
				o.IsSet(DeadLetter) || o.IsSet(CheckpointKeep) {
				return fmt.Sprintf("%+v", *o)
			}
			return ""
		},
	}, {
		name:   "nothing set: every weir option null",
		fields: javaNulls(),
		check: func(o *Options) string {
			for _, d := range All() {
				if o.IsSet(d.Name) {
					return d.Name + " set"
				}
			}
			return ""
		},
	}, {
		name:    "a Long where a duration goes",
		fields:  map[string]any{"beam:option:weir_max_bundle_time:v1": float64(1000)},
		wantErr: "option --weir_max_bundle_time=1000: want a duration such as 10s",
	}, {
		name:    "a fraction where a Long goes",
		fields:  map[string]any{"beam:option:weir_max_bundle_elements:v1": 1.5},
		wantErr: "option --weir_max_bundle_elements=1.5: want a whole number",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := structpb.NewStruct(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Parse(s)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Parse: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(o); why != "" {
				t.Error(why)
			}
		})
	}
}

// javaNulls is what Java sends for a WeirPipelineOptions none of whose
// properties were set but all read (null each).
func javaNulls() map[string]any {
	m := map[string]any{}
	for _, d := range All() {
		m[javaKey(javaName(d.Name))] = nil
	}
	return m
}
