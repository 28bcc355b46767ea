package plugin

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DurationPattern is the schema pattern of a Go duration that is not negative
// ("90s", "1h30m", "0"): the fields tagged `schema:"duration"`.
const DurationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

// SchemaOf returns the JSON schema of a plugin's spec type T (a struct), for
// Description.Schema: the spec is then validated against the same Go type that
// Plan decodes it into, and the two cannot drift apart.
//
// It follows encoding/json: a field's name is its json tag's; a field without
// omitempty is required; embedded structs are inlined; json:"-" is skipped.
// Structs refuse unknown fields (additionalProperties: false), maps take string
// keys. metav1.Duration is a duration string. The tag `schema` adds constraints,
// separated by commas:
//
//	schema:"minLength=1"                    a non-empty string
//	schema:"maxLength=2048"                 a string of at most 2,048 characters
//	schema:"duration"                       a Go duration ≥ 0 (DurationPattern)
//	schema:"enum=NoSchedule|NoExecute"      one of the values
//	schema:"optional"                       not required, although without omitempty
//
// It panics on a type it cannot describe (a channel, a func, a map with non-string
// keys, a bad tag): that is a programming error, caught when the plugin is
// registered, that is at the controller's start and in the plugin's unit tests.
func SchemaOf[T any]() *apiextensionsv1.JSONSchemaProps {
	s := schemaOfType(reflect.TypeFor[T](), map[reflect.Type]bool{})
	return &s
}

var durationType = reflect.TypeFor[metav1.Duration]()

func schemaOfType(t reflect.Type, visiting map[reflect.Type]bool) apiextensionsv1.JSONSchemaProps {
	if t == durationType {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: DurationPattern}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOfType(t.Elem(), visiting)
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case reflect.Slice, reflect.Array:
		items := schemaOfType(t.Elem(), visiting)
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("plugin.SchemaOf: %v: map keys must be strings", t))
		}
		values := schemaOfType(t.Elem(), visiting)
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}}
	case reflect.Struct:
		if visiting[t] {
			panic(fmt.Sprintf("plugin.SchemaOf: %v is recursive", t))
		}
		visiting[t] = true
		defer delete(visiting, t)
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{},
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false}}
		addFields(&s, t, visiting)
		return s
	}
	panic(fmt.Sprintf("plugin.SchemaOf: %v cannot be described by a JSON schema", t))
}

// addFields adds t's fields to the object schema s, inlining embedded structs.
func addFields(s *apiextensionsv1.JSONSchemaProps, t reflect.Type, visiting map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addFields(s, f.Type, visiting) // promoted fields, exported or not, as encoding/json does
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop := schemaOfType(f.Type, visiting)
		required := !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,")
		if tag, ok := f.Tag.Lookup("schema"); ok {
			if applyTag(&prop, tag, t, f.Name) {
				required = false
			}
		}
		s.Properties[name] = prop
		if required {
			s.Required = append(s.Required, name)
		}
	}
}

// applyTag applies a `schema` tag to prop and reports whether it says optional.
func applyTag(prop *apiextensionsv1.JSONSchemaProps, tag string, owner reflect.Type, field string) (optional bool) {
	for _, part := range strings.Split(tag, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "optional":
			optional = true
		case "duration":
			prop.Pattern = DurationPattern
		case "minLength", "maxLength":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				panic(fmt.Sprintf("plugin.SchemaOf: %v.%s: schema tag %q: %v", owner, field, part, err))
			}
			if key == "minLength" {
				prop.MinLength = &n
			} else {
				prop.MaxLength = &n
			}
		case "enum":
			for _, v := range strings.Split(value, "|") {
				prop.Enum = append(prop.Enum, apiextensionsv1.JSON{Raw: []byte(strconv.Quote(v))})
			}
		default:
			panic(fmt.Sprintf("plugin.SchemaOf: %v.%s: unknown schema tag %q", owner, field, part))
		}
	}
	return optional
}
