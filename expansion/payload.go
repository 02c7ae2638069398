package expansion

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// fields is one decoded configuration row, looked up by normalized field
// name. It remembers which fields were read, so fields nobody asked for can
// be reported instead of silently dropped.
type fields struct {
	urn    string
	byName map[string]field
	used   map[string]bool
}

type field struct {
	name string // as the SDK spelled it, for error messages
	t    *pipepb.FieldType
	v    any // as rowDecoder decodes it; nil is null
}

// normalize makes Go's MaxNumRecords, Python's max_num_records and Java's
// maxNumRecords one name.
func normalize(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

// decodeFields decodes an ExternalConfigurationPayload: its schema and the
// one row encoded with it (row.go).
func decodeFields(urn string, payload []byte) (*fields, error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("%s: empty payload, want an ExternalConfigurationPayload", urn)
	}
	var ecp pipepb.ExternalConfigurationPayload
	if err := proto.Unmarshal(payload, &ecp); err != nil {
		return nil, fmt.Errorf("%s: bad ExternalConfigurationPayload: %w", urn, err)
	}
	r, err := decodeRow(ecp.GetSchema(), ecp.GetPayload())
	if err != nil {
		return nil, fmt.Errorf("%s: bad ExternalConfigurationPayload: row: %w", urn, err)
	}
	f := &fields{urn: urn, byName: map[string]field{}, used: map[string]bool{}}
	for i, sf := range r.fields {
		n := normalize(sf.GetName())
		if _, dup := f.byName[n]; dup {
			return nil, fmt.Errorf("%s: field %s appears twice (names are compared without case and underscores)", urn, sf.GetName())
		}
		f.byName[n] = field{name: sf.GetName(), t: sf.GetType(), v: r.values[i]}
	}
	return f, nil
}

// lookup returns the field and whether it is present (declared and not null).
func (f *fields) lookup(name string) (field, bool) {
	n := normalize(name)
	fd, ok := f.byName[n]
	if !ok {
		return field{name: name}, false
	}
	f.used[n] = true
	return fd, fd.v != nil
}

func (f *fields) errorf(fd field, format string, args ...any) error {
	return fmt.Errorf("%s: field %s: %s", f.urn, fd.name, fmt.Sprintf(format, args...))
}

// typeName names a field's schema type in errors.
func typeName(t *pipepb.FieldType) string {
	switch ti := t.GetTypeInfo().(type) {
	case *pipepb.FieldType_AtomicType:
		return ti.AtomicType.String()
	case *pipepb.FieldType_ArrayType:
		return "ARRAY<" + typeName(ti.ArrayType.GetElementType()) + ">"
	case *pipepb.FieldType_IterableType:
		return "ITERABLE<" + typeName(ti.IterableType.GetElementType()) + ">"
	case *pipepb.FieldType_MapType:
		return "MAP<" + typeName(ti.MapType.GetKeyType()) + ", " + typeName(ti.MapType.GetValueType()) + ">"
	case *pipepb.FieldType_RowType:
		return "ROW"
	case *pipepb.FieldType_LogicalType:
		return "logical type " + ti.LogicalType.GetUrn()
	}
	return "an unknown type"
}

// spell returns a field's name as the request spelled it, so errors name
// what the user can find in their SDK (Go's MaxNumRecords, Python's
// max_num_records); a field the request lacks keeps the given name.
func (f *fields) spell(name string) string {
	if fd, ok := f.byName[normalize(name)]; ok {
		return fd.name
	}
	return name
}

func (f *fields) string(name string) (string, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return "", false, nil
	}
	v, isString := fd.v.(string)
	if !isString {
		return "", false, f.errorf(fd, "is %s, want a string", typeName(fd.t))
	}
	return v, true, nil
}

func (f *fields) bool(name string) (bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return false, nil
	}
	v, isBool := fd.v.(bool)
	if !isBool {
		return false, f.errorf(fd, "is %s, want a boolean", typeName(fd.t))
	}
	return v, nil
}

// int64 accepts any integer type: Go sends INT64, Python's numpy fields
// INT32.
func (f *fields) int64(name string) (int64, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return 0, false, nil
	}
	switch v := fd.v.(type) {
	case int64:
		return v, true, nil
	case uint8:
		return int64(v), true, nil
	}
	return 0, false, f.errorf(fd, "is %s, want an integer", typeName(fd.t))
}

func (f *fields) strings(name string) ([]string, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return nil, false, nil
	}
	vs, isList := fd.v.([]any)
	out := make([]string, len(vs))
	for i, v := range vs {
		s, isString := v.(string)
		if !isString {
			isList = false
			break
		}
		out[i] = s
	}
	if !isList {
		return nil, false, f.errorf(fd, "is %s, want a list of strings", typeName(fd.t))
	}
	return out, true, nil
}

func (f *fields) stringMap(name string) (map[string]string, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return nil, false, nil
	}
	es, isMap := fd.v.([]mapEntry)
	out := make(map[string]string, len(es))
	for _, e := range es {
		k, kok := e.k.(string)
		v, vok := e.v.(string)
		if !kok || !vok {
			isMap = false
			break
		}
		out[k] = v
	}
	if !isMap {
		return nil, false, f.errorf(fd, "is %s, want a map of strings to strings", typeName(fd.t))
	}
	return out, true, nil
}

// isEmpty reports whether a present field is an empty map or list, which
// some SDK versions send for None.
func isEmpty(fd field) bool {
	switch v := fd.v.(type) {
	case []any:
		return len(v) == 0
	case []mapEntry:
		return len(v) == 0
	}
	return false
}

// unused reports the fields nobody read: options this service does not know,
// which it refuses rather than drop.
func (f *fields) unused() error {
	var names []string
	for n, fd := range f.byName {
		if !f.used[n] {
			names = append(names, fd.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return fmt.Errorf("%s: unknown field(s) %s: weir does not know what they mean", f.urn, strings.Join(names, ", "))
}

// secondsToMillis converts a duration in seconds, refusing overflow.
func secondsToMillis(s int64) (int64, error) {
	if s > math.MaxInt64/1000 || s < math.MinInt64/1000 {
		return 0, errors.New("out of range")
	}
	return s * 1000, nil
}
