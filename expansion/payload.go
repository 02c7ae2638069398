package expansion

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
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
	name string        // as the SDK spelled it, for error messages
	v    reflect.Value // nil pointers are absent optional fields
}

// normalize makes Go's MaxNumRecords, Python's max_num_records and Java's
// maxNumRecords one name.
func normalize(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

// decodeFields decodes an ExternalConfigurationPayload with the Go SDK's
// schema and row decoding.
func decodeFields(urn string, payload []byte) (f *fields, err error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("%s: empty payload, want an ExternalConfigurationPayload", urn)
	}
	// The SDK's schema code panics on some malformed schemas (a map keyed by
	// a slice, for one); a bad request must not take the server down.
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%s: bad ExternalConfigurationPayload: %v", urn, r)
		}
	}()
	row, err := xlangx.DecodeStructPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: bad ExternalConfigurationPayload: %w", urn, err)
	}
	v := reflect.ValueOf(row)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s: configuration decodes to %v, want a row", urn, v.Type())
	}
	f = &fields{urn: urn, byName: map[string]field{}, used: map[string]bool{}}
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("beam"); ok && tag != "" {
			name, _, _ = strings.Cut(tag, ",")
		}
		n := normalize(name)
		if _, dup := f.byName[n]; dup {
			return nil, fmt.Errorf("%s: field %s appears twice (names are compared without case and underscores)", urn, name)
		}
		f.byName[n] = field{name: name, v: v.Field(i)}
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
	for fd.v.Kind() == reflect.Pointer || fd.v.Kind() == reflect.Interface {
		if fd.v.IsNil() {
			return fd, false
		}
		fd.v = fd.v.Elem()
	}
	return fd, true
}

func (f *fields) errorf(fd field, format string, args ...any) error {
	return fmt.Errorf("%s: field %s: %s", f.urn, fd.name, fmt.Sprintf(format, args...))
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
	if fd.v.Kind() != reflect.String {
		return "", false, f.errorf(fd, "is %v, want a string", fd.v.Type())
	}
	return fd.v.String(), true, nil
}

func (f *fields) bool(name string) (bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return false, nil
	}
	if fd.v.Kind() != reflect.Bool {
		return false, f.errorf(fd, "is %v, want a boolean", fd.v.Type())
	}
	return fd.v.Bool(), nil
}

// int64 accepts any integer type: Go sends INT64, Python's numpy fields
// INT32.
func (f *fields) int64(name string) (int64, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return 0, false, nil
	}
	switch fd.v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fd.v.Int(), true, nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return int64(fd.v.Uint()), true, nil
	}
	return 0, false, f.errorf(fd, "is %v, want an integer", fd.v.Type())
}

func (f *fields) strings(name string) ([]string, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return nil, false, nil
	}
	if fd.v.Kind() != reflect.Slice || fd.v.Type().Elem().Kind() != reflect.String {
		return nil, false, f.errorf(fd, "is %v, want a list of strings", fd.v.Type())
	}
	out := make([]string, fd.v.Len())
	for i := range out {
		out[i] = fd.v.Index(i).String()
	}
	return out, true, nil
}

func (f *fields) stringMap(name string) (map[string]string, bool, error) {
	fd, ok := f.lookup(name)
	if !ok {
		return nil, false, nil
	}
	t := fd.v.Type()
	if t.Kind() != reflect.Map || t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.String {
		return nil, false, f.errorf(fd, "is %v, want a map of strings to strings", t)
	}
	out := make(map[string]string, fd.v.Len())
	for it := fd.v.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().String()
	}
	return out, true, nil
}

// isEmpty reports whether a present field is a nil map or slice, which
// the SDK's decoding gives for a null collection.
func isEmpty(fd field) bool {
	switch fd.v.Kind() {
	case reflect.Map, reflect.Slice:
		return fd.v.IsNil()
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
