package joboptions

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Kind is the type of an option's value.
type Kind int

const (
	String   Kind = iota // any text
	Bool                 // true or false
	Int                  // a whole number
	Duration             // a Go duration: 500ms, 10s, 1m
	Path                 // a file or folder the server reads or writes
	Enum                 // one of Option.Values
	Mapping              // old=new pairs separated by commas
)

var kindNames = [...]string{"string", "bool", "int", "duration", "path", "enum", "mapping"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// want is what a value of kind k must look like, for errors.
func (k Kind) want(values []string) string {
	switch k {
	case Bool:
		return "want true or false"
	case Int:
		return "want a whole number"
	case Duration:
		return "want a duration such as 10s"
	case Enum:
		return "want one of " + strings.Join(values, ", ")
	case Mapping:
		return "want old=new pairs separated by commas"
	}
	return "want a string"
}

// Option declares one job option.
type Option struct {
	Name string
	Kind Kind
	// Group gathers related options in the docs (checkpoints, bundles...).
	Group string
	// Default is the value the option takes when a job does not set it,
	// written as a user would; "" when unset means off, or a default that
	// lives elsewhere (Unset says which).
	Default string
	// Unset says, for the docs, what a job that does not set the option
	// gets when Default alone does not say it.
	Unset string
	// Usage is the one-line description every listing shows.
	Usage string
	// Values are an Enum's choices.
	Values []string

	// check validates a parsed value beyond its kind; it returns what the
	// value should have been.
	check func(v any) string
	// field points into Options at where the value goes.
	field func(o *Options) any
}

// IsPath says the value names a file or folder that the server will open,
// create or read (a dead letter, a checkpoint folder, a savepoint): a
// server exposed to others must check it against the folders it is given
// (DESIGN.md, Security).
func (o *Option) IsPath() bool { return o.Kind == Path }

// DefaultText is the default as the docs and descriptions show it.
func (o *Option) DefaultText() string {
	switch {
	case o.Unset != "":
		return o.Unset
	case o.Default != "":
		return o.Default
	}
	return "unset"
}

// Error is a job option that could not be read.
type Error struct {
	Option string
	// Value is the value as sent, JSON-quoted when it was a string; empty
	// when the error is about the option itself.
	Value  string
	Reason string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("option --%s: %s", e.Option, e.Reason)
	}
	return fmt.Sprintf("option --%s=%s: %s", e.Option, e.Value, e.Reason)
}

// Options are a job's options, typed. The zero value is not useful: start
// from Defaults or Parse.
type Options struct {
	// JobName is the job_name option; "" when the job did not set it.
	JobName string

	DeadLetter string

	CombineLifting     bool
	AdaptivePrecombine bool
	AdaptiveUnlift     bool
	InputSpreadWarning time.Duration
	InlineGroupBytes   int
	// SourceParallelism is 0 when the job does not set it.
	SourceParallelism int

	// Zero bounds leave the executor's defaults.
	MaxBundleElements int
	MaxBundleBytes    int
	MaxBundleTime     time.Duration
	// StreamBundleOutput is StreamAuto, StreamOn or StreamOff.
	StreamBundleOutput string

	// CheckpointInterval is zero when the job takes no checkpoints; zero
	// durations and counts below leave the checkpoint package's defaults.
	CheckpointInterval          time.Duration
	CheckpointDir               string
	CheckpointMode              string
	CheckpointAlignedTimeout    time.Duration
	CheckpointTimeout           time.Duration
	CheckpointTolerableFailures int
	CheckpointKeep              int
	Restore                     bool

	// RestartAttempts and RestartDelay apply to jobs with checkpoints.
	RestartAttempts int
	RestartDelay    time.Duration

	Savepoint                  string
	SavepointRename            map[string]string
	SavepointAllowDroppedState bool

	// HTTPAddr is where the in-process runner serves /metrics and the UI.
	HTTPAddr string

	set map[string]bool
}

// IsSet says whether the job set option name (to any value, the default
// included): a job's option wins over a server's default only then.
func (o *Options) IsSet(name string) bool { return o.set[name] }

// Lookup returns the declared option called name.
func Lookup(name string) (*Option, bool) {
	i := slices.IndexFunc(declared, func(o Option) bool { return o.Name == name })
	if i < 0 {
		return nil, false
	}
	o := declared[i]
	return &o, true
}

// All returns every declared option, in the declaration's order.
func All() []Option { return slices.Clone(declared) }

// Defaults returns the options of a job that sets none.
func Defaults() *Options {
	o := &Options{set: map[string]bool{}}
	for i := range declared {
		d := &declared[i]
		if d.Default == "" {
			continue
		}
		v, err := d.parseText(d.Default)
		if err != nil {
			// The declaration's own test parses every default.
			panic(fmt.Sprintf("joboptions: default of %s: %v", d.Name, err))
		}
		d.assign(o, v)
	}
	return o
}

// The keys under which SDKs send options.
const (
	goOptions = "beam:option:go_options:v1"
	jobName   = "job_name"
)

// Parse reads a job's pipeline options. Every option that cannot be read
// is reported, each as an *Error, joined.
func Parse(s *structpb.Struct) (*Options, error) {
	o := Defaults()
	fields := s.GetFields()
	goFields := fields[goOptions].GetStructValue().GetFields()["options"].GetStructValue().GetFields()
	// find returns the value an SDK sent for name, nil when none.
	find := func(name string) *structpb.Value {
		for _, v := range []*structpb.Value{fields["beam:option:"+name+":v1"], fields[name], goFields[name]} {
			if !unset(v) {
				return v
			}
		}
		return nil
	}
	var errs []error
	for i := range declared {
		d := &declared[i]
		v := find(d.Name)
		if v == nil {
			continue
		}
		parsed, err := d.parseValue(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.assign(o, parsed)
		o.set[d.Name] = true
	}
	if v := find(jobName); v != nil {
		name, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			errs = append(errs, &Error{Option: jobName, Value: jsonText(v), Reason: "want a string"})
		} else {
			o.JobName = name.StringValue
		}
	}
	errs = append(errs, undeclared(fields, goFields)...)
	errs = append(errs, o.validate()...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return o, nil
}

// unset says v carries no value: absent, null, or an empty string.
func unset(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return true
	case *structpb.Value_StringValue:
		return k.StringValue == ""
	}
	return false
}

// undeclared reports the options named weir_* that weir does not declare,
// in name order.
func undeclared(fields, goFields map[string]*structpb.Value) []error {
	seen := map[string]bool{}
	check := func(name string, v *structpb.Value) {
		if strings.HasPrefix(name, "weir_") && !seen[name] && !unset(v) {
			if _, ok := Lookup(name); !ok {
				seen[name] = true
			}
		}
	}
	for k, v := range fields {
		if n, ok := strings.CutPrefix(k, "beam:option:"); ok {
			k, _ = strings.CutSuffix(n, ":v1")
		}
		check(k, v)
	}
	for k, v := range goFields {
		check(k, v)
	}
	var errs []error
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range seen {
			if !yield(n) {
				return
			}
		}
	}) {
		errs = append(errs, &Error{Option: name, Reason: "weir has no such job option (docs/options.md lists them)"})
	}
	return errs
}

// validate checks the rules between options.
func (o *Options) validate() []error {
	var errs []error
	if o.Savepoint != "" && o.CheckpointInterval == 0 {
		// The restored job must itself be restorable.
		errs = append(errs, &Error{Option: Savepoint, Value: strconv.Quote(o.Savepoint),
			Reason: "needs --" + CheckpointInterval + ": a job started from a savepoint takes checkpoints"})
	}
	if o.Savepoint == "" {
		for _, name := range []string{SavepointRename, SavepointAllowDroppedState} {
			if o.IsSet(name) {
				errs = append(errs, &Error{Option: name, Reason: "needs --" + Savepoint})
			}
		}
	}
	if o.CheckpointInterval == 0 {
		for _, name := range []string{RestartAttempts, RestartDelay} {
			if o.IsSet(name) {
				errs = append(errs, &Error{Option: name, Reason: "needs --" + CheckpointInterval + ": a job restarts from its checkpoints"})
			}
		}
	}
	if o.CheckpointMode == ModeAlignedTimeout && o.CheckpointAlignedTimeout == 0 {
		errs = append(errs, &Error{Option: CheckpointMode, Value: strconv.Quote(o.CheckpointMode),
			Reason: "needs --" + CheckpointAlignedTimeout})
	}
	return errs
}

// parseValue reads v, a value as an SDK sent it.
func (d *Option) parseValue(v *structpb.Value) (any, error) {
	bad := func(reason string) error { return &Error{Option: d.Name, Value: jsonText(v), Reason: reason} }
	var parsed any
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		p, err := d.parseText(k.StringValue)
		if err != nil {
			return nil, bad(err.Error())
		}
		parsed = p
	case *structpb.Value_BoolValue:
		if d.Kind != Bool {
			return nil, bad(d.Kind.want(d.Values))
		}
		parsed = k.BoolValue
	case *structpb.Value_NumberValue:
		n := k.NumberValue
		if d.Kind != Int || n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return nil, bad(d.Kind.want(d.Values))
		}
		parsed = int(n)
	default:
		return nil, bad(d.Kind.want(d.Values))
	}
	if d.check != nil {
		if why := d.check(parsed); why != "" {
			return nil, bad(why)
		}
	}
	return parsed, nil
}

// parseText reads s, an option's value as text (a flag, a Go SDK option, a
// default), into its Go type; it does not apply check.
func (d *Option) parseText(s string) (any, error) {
	switch d.Kind {
	case Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errors.New(d.Kind.want(nil))
		}
		return b, nil
	case Int:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New(d.Kind.want(nil))
		}
		return n, nil
	case Duration:
		t, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New(d.Kind.want(nil))
		}
		return t, nil
	case Enum:
		if !slices.Contains(d.Values, s) {
			return nil, errors.New(d.Kind.want(d.Values))
		}
		return s, nil
	case Mapping:
		m, err := parseMapping(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Kind.want(nil), err)
		}
		return m, nil
	}
	return s, nil
}

// assign stores v, of the option's Go type, into o.
func (d *Option) assign(o *Options, v any) {
	switch p := d.field(o).(type) {
	case *string:
		*p = v.(string)
	case *bool:
		*p = v.(bool)
	case *int:
		*p = v.(int)
	case *time.Duration:
		*p = v.(time.Duration)
	case *map[string]string:
		*p = v.(map[string]string)
	default:
		panic(fmt.Sprintf("joboptions: option %s fills a %T", d.Name, p))
	}
}

// parseMapping reads old=new pairs separated by commas.
func parseMapping(s string) (map[string]string, error) {
	m := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, pair := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("%q is not old=new", pair)
		}
		if prev, dup := m[from]; dup && prev != to {
			return nil, fmt.Errorf("%q is renamed twice, to %q and %q", from, prev, to)
		}
		m[from] = to
	}
	return m, nil
}

// jsonText shows a value as it was sent: strings quoted, the rest as JSON.
func jsonText(v *structpb.Value) string {
	b, err := json.Marshal(v.AsInterface())
	if err != nil {
		return fmt.Sprint(v.AsInterface())
	}
	return string(b)
}

// PathValue is the value of a job option of kind Path.
type PathValue struct {
	Option string // its name, as weir_dead_letter
	Path   string
}

// Paths returns the job's options of kind Path that have a value, in the
// declaration's order: what a confined server checks against its folders.
func (o *Options) Paths() []PathValue {
	var ps []PathValue
	for i := range declared {
		d := &declared[i]
		if !d.IsPath() {
			continue
		}
		if p, ok := d.field(o).(*string); ok && *p != "" {
			ps = append(ps, PathValue{Option: d.Name, Path: *p})
		}
	}
	return ps
}
