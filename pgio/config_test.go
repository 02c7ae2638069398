package pgio

import (
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := WriteConfig{Connection: "postgres://h/db", Table: "t"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, c := range []struct {
		name string
		cfg  WriteConfig
		want []string
	}{
		{"empty", WriteConfig{}, []string{"no connection", "table: empty"}},
		{"three-part table", WriteConfig{Connection: "c", Table: "db.s.t"}, []string{`"db.s.t": want name or schema.name`}},
		{"empty part", WriteConfig{Connection: "c", Table: "s."}, []string{`table: "s.": empty name`}},
		{"long name", WriteConfig{Connection: "c", Table: strings.Repeat("x", 64)}, []string{"longer than PostgreSQL's 63 bytes"}},
		{"mode", WriteConfig{Connection: "c", Table: "t", Mode: "merge"}, []string{`unknown mode "merge"`}},
		{"upsert without key", WriteConfig{Connection: "c", Table: "t", Mode: ModeUpsert}, []string{"needs key columns"}},
		{"insert with key", WriteConfig{Connection: "c", Table: "t", Key: []string{"id"}}, []string{`key ["id"] is for mode "upsert"`}},
		{"key twice", WriteConfig{Connection: "c", Table: "t", Mode: ModeUpsert, Key: []string{"id", "id"}}, []string{`key column "id" appears twice`}},
		{"marker table", WriteConfig{Connection: "c", Table: "t", MarkerTable: "a.b.c"}, []string{"marker_table"}},
		{"rename to nothing", WriteConfig{Connection: "c", Table: "t", Columns: map[string]string{"f": ""}}, []string{`columns: column "": empty name`}},
	} {
		err := c.cfg.Validate()
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want one holding %q", c.name, err, w)
			}
		}
	}
}

func TestColumnsOf(t *testing.T) {
	c := WriteConfig{Connection: "c", Table: "t", Mode: ModeUpsert, Key: []string{"id"}, Columns: map[string]string{"ID": "id"}}
	cols, err := c.ColumnsOf([]string{"ID", "name"})
	if err != nil || !slices.Equal(cols, []string{"id", "name"}) {
		t.Errorf("ColumnsOf = %q, %v; want [id name]", cols, err)
	}
	c.Columns = map[string]string{"name": "id", "gone": "x"}
	_, err = c.ColumnsOf([]string{"id", "name"})
	for _, w := range []string{`fields "id" and "name" both go to column "id"`, `columns renames "gone", which is not a field`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one holding %q", err, w)
		}
	}
	c = WriteConfig{Connection: "c", Table: "t", Mode: ModeUpsert, Key: []string{"day"}}
	if _, err := c.ColumnsOf([]string{"id"}); err == nil || !strings.Contains(err.Error(), `key column "day" is not written`) {
		t.Errorf("error %v, want the key column named", err)
	}
}

func TestMarkers(t *testing.T) {
	for _, c := range []struct {
		cfg  WriteConfig
		want []string
	}{
		{WriteConfig{Table: "t"}, []string{DefaultMarkerTable}},
		{WriteConfig{Table: "s.t"}, []string{"s", DefaultMarkerTable}},
		{WriteConfig{Table: "s.t", MarkerTable: "m"}, []string{"m"}},
	} {
		if got := c.cfg.Markers(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: markers %q, want %q", c.cfg, got, c.want)
		}
	}
}

func TestDecodeWrite(t *testing.T) {
	if _, err := DecodeWrite([]byte(`{"connection":"c","table":"t","batch":5}`)); err == nil || !strings.Contains(err.Error(), `unknown field "batch"`) {
		t.Errorf("error %v, want the unknown field named", err)
	}
	if _, err := DecodeWrite([]byte(`{"connection":"c"}`)); err == nil || !strings.Contains(err.Error(), "postgres write: table") {
		t.Errorf("error %v, want the missing table named", err)
	}
	c, err := DecodeWrite([]byte(`{"connection":"c","table":"t","mode":"upsert","key":["id"]}`))
	if err != nil || !c.IsUpsert() {
		t.Errorf("DecodeWrite = %+v, %v", c, err)
	}
}
