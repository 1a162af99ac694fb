package statuspage_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/statuspage"
)

// The schema is written down in docs/observability.md: every JSON name of
// every type of it is there, so that a field added to the types is added
// to the documentation.
func TestSchemaIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## The status data as JSON")
	if !ok {
		t.Fatal(`docs/observability.md has no section "The status data as JSON"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[statuspage.Snapshot]().PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && !strings.Contains(section, "`"+name+"`") {
				t.Errorf("%s.%s: docs/observability.md does not name %q", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[statuspage.Snapshot]())
	walk(reflect.TypeFor[statuspage.Record]())
	if len(seen) < 10 {
		t.Errorf("walked %d types of the schema; want them all", len(seen))
	}
}
