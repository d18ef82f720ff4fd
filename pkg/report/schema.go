package report

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// SchemaID is the $id of the JSON Schema of the report (schemaVersion 1).
const SchemaID = "https://github.com/lanaccess/kubectl-lanaccess/blob/main/docs/report.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of the report WriteJSON writes, generated
// from the very types it encodes, so that the schema cannot drift from the output. Fields
// without omitempty are required; objects accept fields the schema does not name, because the
// contract adds fields within a schemaVersion and never renames them.
func JSONSchema() ([]byte, error) {
	s := schemaOf(reflect.TypeFor[jsonReport]())
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = SchemaID
	s["title"] = "kubectl lanaccess report, schemaVersion 1"
	s["description"] = "The report of doctor, vpn-trace and client-check (-o json, --json-file); -o yaml is the same document."
	props := s["properties"].(map[string]any)
	props["schemaVersion"] = map[string]any{"const": SchemaVersion}
	props["command"] = map[string]any{"enum": []string{"doctor", "vpn-trace", "client-check"}}
	return json.MarshalIndent(s, "", "  ")
}

// enums are the closed sets of values among the report's string types.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[engine.Status]():   {string(engine.StatusPass), string(engine.StatusWarn), string(engine.StatusFail), string(engine.StatusSkip), string(engine.StatusError)},
	reflect.TypeFor[engine.Severity](): {string(engine.SeverityInfo), string(engine.SeverityWarn), string(engine.SeverityFail)},
}

func schemaOf(t reflect.Type) map[string]any {
	if e, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": e}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.Struct:
		props, required := map[string]any{}, []string{}
		for f := range t.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			props[name] = schemaOf(f.Type)
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
		}
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	// interface{} (a finding's evidence values): any JSON value.
	return map[string]any{}
}
