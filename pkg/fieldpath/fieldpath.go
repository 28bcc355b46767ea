package fieldpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// ErrEmpty is returned for a path that names no field.
var ErrEmpty = errors.New("the path is empty")

// MaxLength is the longest path Parse takes (a reference's path, a
// readyWhenFieldPath), far longer than any field path: client-go's JSONPath
// parser recurses once per token, and a path of a million and a half spaces
// overflowed the stack — a fatal error no recovery catches — while one of a
// few hundred thousand took seconds and hundreds of MB. The CRD's schema
// bounds a reference's path to it too.
const MaxLength = 1024

// Normalize returns path in canonical form: without surrounding braces, without
// the leading "$" and without the leading "." (status.phase, ['status'].phase).
// It accepts, alike, status.phase, .status.phase, $.status.phase, {.status.phase}
// and {$.status.phase}. It only rewrites the path's start; whether the rest is a
// valid JSONPath is for Parse to say.
func Normalize(path string) (string, error) {
	p := strings.TrimSpace(path)
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
		p = strings.TrimSpace(p[1 : len(p)-1])
	}
	p = strings.TrimPrefix(p, "$")
	if !strings.HasPrefix(p, "..") {
		p = strings.TrimPrefix(p, ".")
	}
	switch {
	case p == "":
		return "", ErrEmpty
	case strings.HasPrefix(p, "."):
		return "", fmt.Errorf("%q starts with a recursive descent (..), which finds the field anywhere in the object: write the path from the object's root, such as status.phase", path)
	}
	return p, nil
}

// StartsAt reports whether path starts at the object's top-level field, in any
// of the forms Normalize accepts: status, status.phase, ['status'].phase,
// {.status.conditions[0]}; not statusText.
func StartsAt(path, field string) bool {
	p, err := Normalize(path)
	if err != nil {
		return false
	}
	for _, start := range []string{field, "['" + field + "']", `["` + field + `"]`} {
		if rest, ok := strings.CutPrefix(p, start); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// Parse normalizes path and parses it into a JSONPath that yields the field's
// values. allowMissingKeys makes a missing key yield nothing instead of an error.
func Parse(path string, allowMissingKeys bool) (*jsonpath.JSONPath, error) {
	if len(path) > MaxLength {
		return nil, fmt.Errorf("the path is longer than %d characters (%d)", MaxLength, len(path))
	}
	p, err := Normalize(path)
	if err != nil {
		return nil, err
	}
	template := "{$." + p + "}"
	if strings.HasPrefix(p, "[") {
		// {$.['status']} does not parse as intended; {$['status']} does.
		template = "{$" + p + "}"
	}
	// A stray brace would turn the template into several expressions or add text
	// to it, such as "data.host}" giving the value and "}"; only a template that
	// is one expression is a path.
	parser, err := jsonpath.Parse("path", template)
	if err != nil {
		return nil, fmt.Errorf("invalid JSONPath: %w", err)
	}
	if len(parser.Root.Nodes) != 1 || parser.Root.Nodes[0].Type() != jsonpath.NodeList {
		return nil, errors.New("invalid JSONPath: braces are not allowed")
	}
	parsed := jsonpath.New("path").AllowMissingKeys(allowMissingKeys)
	if err := parsed.Parse(template); err != nil {
		return nil, fmt.Errorf("invalid JSONPath: %w", err)
	}
	return parsed, nil
}

// TypeOf names the JSON type of v, a value of unstructured content (what a field
// path finds), for messages that say a field has the wrong type: "a string",
// "a list", "an object".
func TypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float32, float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
