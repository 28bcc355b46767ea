package reference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/fieldpath"
)

// ErrNotAvailable is wrapped by the error of a reference whose source object is
// not available and that has no example to stand in for it.
var ErrNotAvailable = errors.New("value not available yet")

// ErrStatusNotSet is wrapped by the error of a reference whose path, into the
// source's status, finds nothing: no such key, an index past the end of a list,
// a filter without a match. A status is written by the object's controller, often
// after the object is Ready for kstatus (a LoadBalancer Service's ingress), so the
// value may still come; a path into what the object declares (spec, data) that
// finds nothing is a mistake.
var ErrStatusNotSet = errors.New("status field not set yet")

// Error is the error of one reference. It unwraps to its cause, so
// errors.Is(err, ErrNotAvailable) tells a dependency that does not exist yet from
// a broken reference.
type Error struct {
	// Reference is the name of the reference.
	Reference string
	// Resource is the referenced resource.
	Resource string
	// Path is the reference's path, if it has one.
	Path string
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("reference %q to resource %q: %v", e.Reference, e.Resource, e.Err)
	}
	return fmt.Sprintf("reference %q: path %q in resource %q: %v", e.Reference, e.Path, e.Resource, e.Err)
}

func (e *Error) Unwrap() error {
	return e.Err
}

// Source is a resource of the Bundle as the references to it see it.
type Source struct {
	// Object is the content of the resource's live object, or nil while it is not
	// available.
	Object map[string]interface{}
	// Secret reports that the resource is a Secret. Callers set it from the
	// declared object, which is known before the live object exists, so that the
	// Secret rule holds for examples too. A live object that is a Secret counts as
	// one either way.
	Secret bool
}

// Value is the resolved value of one reference.
type Value struct {
	// Data is the value as unstructured content: string, int64, float64, bool,
	// nil, map[string]interface{} or []interface{}.
	Data interface{}
	// FromSecret reports that Data was read from a Secret, or stands in for a value
	// that will be, and so may only be injected into a Secret.
	FromSecret bool
}

// Values maps the names of references to their resolved values.
type Values map[string]Value

// IsSecret reports whether obj, an object's unstructured content, is a core v1
// Secret.
func IsSecret(obj map[string]interface{}) bool {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return apiVersion == "v1" && kind == "Secret"
}

// Resolve returns the values of the named references in refs, reading them from
// sources, keyed by resource name. A resource missing from sources is treated as
// not available. If useExamples is set, the example of a reference stands in for
// a value that is not available; otherwise, or without an example, such a
// reference yields an *Error wrapping ErrNotAvailable.
//
// References are resolved in order and the first failure is returned as an
// *Error. The values do not share memory with sources.
func Resolve(refs []v1alpha1.Reference, sources map[string]Source, useExamples bool) (Values, error) {
	values := make(Values, len(refs))
	for _, ref := range refs {
		if ref.Name == "" {
			continue
		}
		if _, ok := values[ref.Name]; ok {
			return nil, fmt.Errorf("reference %q is declared more than once", ref.Name)
		}
		value, err := resolve(ref, sources[ref.Resource], useExamples)
		if err != nil {
			return nil, &Error{Reference: ref.Name, Resource: ref.Resource, Path: ref.Path, Err: err}
		}
		values[ref.Name] = value
	}
	return values, nil
}

func resolve(ref v1alpha1.Reference, source Source, useExamples bool) (Value, error) {
	fromSecret := source.Secret || IsSecret(source.Object)

	// The path is parsed even when it cannot be evaluated yet, so that a typo is
	// reported when the Bundle is validated rather than once the dependency exists.
	if ref.Path == "" {
		return Value{}, errors.New("a named reference needs a path")
	}
	path, err := fieldpath.Parse(ref.Path, false)
	if err != nil {
		return Value{}, err
	}

	if source.Object == nil {
		if !useExamples || ref.Example == nil {
			return Value{}, ErrNotAvailable
		}
		var example interface{}
		// utiljson keeps integers as int64, as in unstructured content.
		if err := utiljson.Unmarshal(ref.Example.Raw, &example); err != nil {
			return Value{}, fmt.Errorf("invalid example: %w", err)
		}
		return Value{Data: example, FromSecret: fromSecret}, nil
	}

	results, err := path.FindResults(source.Object)
	if err != nil {
		if !fromSecret && (strings.Contains(ref.Path, ".*") || strings.Contains(ref.Path, "..")) {
			// client-go walks .* and .. over a map in no set order and names
			// the first value it cannot follow: the same object failed another
			// way at each pass (a status write and a Warning each). A Secret's
			// causes have fixed words already (secretCause).
			return Value{}, errors.New("the path's wildcard or recursive descent reaches a value it cannot follow")
		}
		if fromSecret {
			err = secretCause(err, ref.Path)
		} else {
			err = boundCause(err)
		}
		if fieldpath.StartsAt(ref.Path, "status") && findsNothing(err, ref.Path) {
			return Value{}, notSet{err}
		}
		return Value{}, err
	}
	// The template is a single {…} expression, so there is at most one list.
	var found []interface{}
	for _, result := range results {
		for _, value := range result {
			found = append(found, value.Interface())
		}
	}
	switch len(found) {
	case 0:
		if fieldpath.StartsAt(ref.Path, "status") {
			return Value{}, notSet{errors.New("no value found")}
		}
		return Value{}, errors.New("no value found")
	case 1:
		return Value{Data: deepCopy(found[0]), FromSecret: fromSecret}, nil
	default:
		if fromSecret {
			// The count may be a value's length: data.password.* finds its bytes.
			return Value{}, errors.New("several values found, exactly one is required")
		}
		return Value{}, fmt.Errorf("%d values found, exactly one is required", len(found))
	}
}

// maxCauseText bounds the text of a cause that client-go's JSONPath wrote: some
// of its errors print the value they could not use (a filter over an object
// prints the object), which may be a ConfigMap's 1 MiB, and the error becomes a
// resource's message, the Ready condition's and an event's.
const maxCauseText = 1024

// boundCause is err, or its text cut to maxCauseText.
func boundCause(err error) error {
	if len(err.Error()) <= maxCauseText {
		return err
	}
	return errors.New(boundedtext.Cut(err.Error(), maxCauseText))
}

// withheld ends the causes secretCause rewrites, so that the reader knows why
// they say less than for another kind.
const withheld = "(a Secret's values are left out of errors)"

var (
	// notFound and outOfBounds are causes of client-go's JSONPath that hold no
	// value: a key the path names (notFound checks it is the path's), indexes and
	// a list's length.
	notFound    = regexp.MustCompile(`^(.+) is not found$`)
	outOfBounds = regexp.MustCompile(`^(array index out of bounds: index -?[0-9]+, length [0-9]+|starting index -?[0-9]+ is greater than ending index -?[0-9]+)$`)
	// valueFree are other causes of client-go's JSONPath that hold no value.
	valueFree = map[string]bool{
		"can only compare one element at a time": true,
		"incompatible types for comparison":      true,
		"invalid type for comparison":            true,
		"missing argument for comparison":        true,
		"step must be > 0":                       true,
	}
)

// secretCause is the cause of a failed evaluation of path on a Secret, keeping
// only what client-go's JSONPath said that is known to hold no value: some of
// its errors print the value they could not use (a filter over data prints
// data, every key with its value), and the error is written where a Secret's
// readers are not the only ones to look (the Bundle's status, events).
func secretCause(err error, path string) error {
	text := err.Error()
	if pathKeyMissing(text, path) {
		return err
	}
	if outOfBounds.MatchString(text) || valueFree[text] {
		return err
	}
	switch {
	case strings.HasSuffix(text, " is not array or slice and cannot be filtered"):
		return errors.New("a filter ([?(…)]) meets a value that is not a list " + withheld)
	case strings.HasSuffix(text, " is not array or slice"):
		return errors.New("an index ([…]) meets a value that is not a list " + withheld)
	}
	return errors.New("the path cannot be evaluated on the Secret " + withheld)
}

// notSet is the cause of a reference whose path into the status finds nothing
// (ErrStatusNotSet): its text is the cause's.
type notSet struct{ cause error }

func (e notSet) Error() string   { return e.cause.Error() }
func (e notSet) Unwrap() []error { return []error{e.cause, ErrStatusNotSet} }

// findsNothing reports whether err, a failed evaluation of path, says that
// something the path names is not there: a key of the path, or an index past a
// list's end. Other failures (a filter over a value that is not a list, a
// comparison of the wrong types) say the path does not fit the object.
func findsNothing(err error, path string) bool {
	text := err.Error()
	return pathKeyMissing(text, path) || strings.HasPrefix(text, "array index out of bounds: ")
}

// pathKeyMissing reports whether text, a cause of client-go's JSONPath, is
// "<key> is not found" for a key that path names (and so holds no value).
func pathKeyMissing(text, path string) bool {
	m := notFound.FindStringSubmatch(text)
	return m != nil && strings.Contains(path, m[1])
}

// MarkerOpening opens every marker, and every escape of one (!!{x}): text
// without it is the same substituted or not, so that callers can skip the
// substitution of text that cannot change, and tell text that would.
const MarkerOpening = "!{"

var (
	// wholeMarker matches a string that is nothing but a marker, which is replaced
	// by the value with its type.
	wholeMarker = regexp.MustCompile(`^!\{([^{}]+)\}$`)
	// marker matches the markers anywhere in a string, with the run of ! before
	// their { : two ! there are one ! of text (as $$ is in a Makefile), so
	// that a template can hold the characters of a marker (a Pug template's
	// !{html}: !!{html}). An odd run is a marker after half the rest in text
	// (!!!{host}: "!" and the value), an even one is text (!!{html}: "!{html}").
	marker = regexp.MustCompile(`(!+)\{([^{}]+)\}`)
)

// markerMatch is one match of marker in a string: the byte offsets of the whole
// match and of the name, the ! of text before it, and whether it is text too.
type markerMatch struct {
	start, end, nameStart, nameEnd int
	bangs                          string
	escaped                        bool
}

func (m markerMatch) name(str string) string { return str[m.nameStart:m.nameEnd] }

// markersIn returns the markers of str, escaped ones included, in order.
func markersIn(str string) []markerMatch {
	var out []markerMatch
	for _, m := range marker.FindAllStringSubmatchIndex(str, -1) {
		run := m[3] - m[2]
		out = append(out, markerMatch{start: m[0], end: m[1], nameStart: m[4], nameEnd: m[5],
			bangs: strings.Repeat("!", run/2), escaped: run%2 == 0})
	}
	return out
}

// Markers returns the distinct names used in the !{name} markers of obj's string
// values, sorted. Map keys are not looked at, as Substitute does not replace
// them.
func Markers(obj map[string]interface{}) []string {
	seen := map[string]bool{}
	var walk func(value interface{})
	walk = func(value interface{}) {
		switch value := value.(type) {
		case map[string]interface{}:
			for _, v := range value {
				walk(v)
			}
		case []interface{}:
			for _, v := range value {
				walk(v)
			}
		case string:
			for _, m := range markersIn(value) {
				if !m.escaped {
					seen[m.name(value)] = true
				}
			}
		}
	}
	walk(obj)

	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// MaxSubstitutedBytes bounds the values Substitute puts into one object, counted
// as they are put: a value substituted for a whole-string marker by its JSON
// size, one interpolated into a longer string by its text's length. One value
// used by many markers is otherwise an object of their product: a ConfigMap's
// 1 MiB value used by a thousand markers, 1 GiB, which the controller would
// marshal (to hash it, then to apply it) before the API server refused it, and
// be OOM-killed again after every restart.
//
// The API server takes no request body over 3 MiB (k8s.io/apiserver's
// MaxRequestBodyBytes: twice etcd's default 1.5 MiB, as the JSON of an object
// is larger than what etcd stores) and bounds what a JSON patch's copies add
// at the same 3 MiB (JSONPatchMaxCopyBytes): an object that needs more cannot
// be applied. The object's own text, within the Bundle's, comes on top.
const MaxSubstitutedBytes = 3 << 20

// ErrTooLarge is wrapped by the error of a substitution whose values would pass
// MaxSubstitutedBytes.
var ErrTooLarge = fmt.Errorf("the values substituted into one object are limited to %d MiB (%d bytes)", MaxSubstitutedBytes>>20, MaxSubstitutedBytes)

// Substitute returns a deep copy of obj, an object's unstructured content, with
// the markers of its string values replaced by values; obj is not modified. A
// substitution that would put more than MaxSubstitutedBytes of values into obj
// stops there, with an error wrapping ErrTooLarge.
//
// Whether obj is a Secret, and so may take values read from Secrets, is decided
// on obj as given, before substitution. Maps are walked in key order, so that
// the error returned, for the first offending field, is always the same.
func Substitute(obj map[string]interface{}, values Values) (map[string]interface{}, error) {
	s := &substituter{values: values, targetIsSecret: IsSecret(obj)}
	out, err := s.walk(nil, obj)
	if err != nil {
		return nil, err
	}
	substituted, _ := out.(map[string]interface{})
	return substituted, nil
}

// SubstituteExamples is Substitute, bound included, with the examples of refs
// standing in for their values, to check a resource before its references can
// be resolved (a plugin spec against its schema). A string with a marker whose reference has
// no example is left as it is, and its path is returned: its value is known
// only once resolved. The Secret rule is not checked (bundlespec checks it on
// the declared kinds).
func SubstituteExamples(obj map[string]interface{}, refs []v1alpha1.Reference) (map[string]interface{}, []string, error) {
	values := Values{}
	for _, ref := range refs {
		if ref.Name == "" || ref.Example == nil {
			continue
		}
		var example interface{}
		if err := utiljson.Unmarshal(ref.Example.Raw, &example); err != nil {
			return nil, nil, fmt.Errorf("reference %q: invalid example: %w", ref.Name, err)
		}
		values[ref.Name] = Value{Data: example}
	}
	var unresolved []string
	s := &substituter{values: values, unresolved: &unresolved}
	out, err := s.walk(nil, obj)
	if err != nil {
		return nil, nil, err
	}
	substituted, _ := out.(map[string]interface{})
	return substituted, unresolved, nil
}

type substituter struct {
	values         Values
	targetIsSecret bool
	// unresolved, when set, collects the paths of strings with a marker that
	// values lacks, left as they are (SubstituteExamples).
	unresolved *[]string
	// substituted is the size of the values substituted so far, against
	// MaxSubstitutedBytes; secretCounted reports that it counts a value read
	// from a Secret.
	substituted   int
	secretCounted bool
	// sizes and texts hold, by reference name, the JSON size of a value
	// substituted whole and the text of one interpolated: each is computed once,
	// however many markers use the value.
	sizes map[string]int
	texts map[string]string
}

func (s *substituter) walk(path *field.Path, value interface{}) (interface{}, error) {
	switch value := value.(type) {
	case map[string]interface{}:
		if value == nil {
			return value, nil
		}
		out := make(map[string]interface{}, len(value))
		for _, key := range slices.Sorted(maps.Keys(value)) {
			v, err := s.walk(child(path, key), value[key])
			if err != nil {
				return nil, err
			}
			out[key] = v
		}
		return out, nil
	case []interface{}:
		if value == nil {
			return value, nil
		}
		out := make([]interface{}, len(value))
		for i, item := range value {
			v, err := s.walk(path.Index(i), item)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case string:
		return s.string(path, value)
	default:
		return value, nil
	}
}

func (s *substituter) string(path *field.Path, str string) (interface{}, error) {
	matches := markersIn(str)
	if s.unresolved != nil {
		for _, m := range matches {
			if _, ok := s.values[m.name(str)]; !ok && !m.escaped {
				*s.unresolved = append(*s.unresolved, path.String())
				return str, nil
			}
		}
	}
	if match := wholeMarker.FindStringSubmatch(str); match != nil {
		value, err := s.lookup(path, match[1])
		if err != nil {
			return nil, err
		}
		size, ok := s.sizes[match[1]]
		if !ok {
			// Unstructured content always marshals.
			raw, _ := json.Marshal(value.Data)
			size = len(raw)
			if s.sizes == nil {
				s.sizes = map[string]int{}
			}
			s.sizes[match[1]] = size
		}
		if err := s.add(path, match[1], value, size); err != nil {
			return nil, err
		}
		// Each use gets its own copy, so that the result shares no memory with
		// values or with another field.
		return deepCopy(value.Data), nil
	}

	if len(matches) == 0 {
		return str, nil
	}
	var out strings.Builder
	last := 0
	for _, m := range matches {
		out.WriteString(str[last:m.start])
		out.WriteString(m.bangs)
		last = m.end
		if m.escaped {
			out.WriteString(str[m.nameStart-1 : m.end]) // {name}
			continue
		}
		value, err := s.lookup(path, m.name(str))
		if err != nil {
			return nil, err
		}
		text, ok := s.texts[m.name(str)]
		if !ok {
			if text, err = toText(value.Data); err != nil {
				return nil, fmt.Errorf("%s: reference %q: %w", path, m.name(str), err)
			}
			if s.texts == nil {
				s.texts = map[string]string{}
			}
			s.texts[m.name(str)] = text
		}
		if err := s.add(path, m.name(str), value, len(text)); err != nil {
			return nil, err
		}
		out.WriteString(text)
	}
	out.WriteString(str[last:])
	return out.String(), nil
}

// add counts the size bytes of value, of the reference name, substituted at
// path, or fails if they would pass MaxSubstitutedBytes.
func (s *substituter) add(path *field.Path, name string, value Value, size int) error {
	if size > MaxSubstitutedBytes-s.substituted {
		if value.FromSecret || s.secretCounted {
			// The sizes would tell the error's readers a Secret value's length.
			return fmt.Errorf("%s: !{%s}: %w", path, name, ErrTooLarge)
		}
		return fmt.Errorf("%s: !{%s} (%d bytes, after %d bytes of values substituted before it): %w", path, name, size, s.substituted, ErrTooLarge)
	}
	s.substituted += size
	s.secretCounted = s.secretCounted || value.FromSecret
	return nil
}

func (s *substituter) lookup(path *field.Path, name string) (Value, error) {
	value, ok := s.values[name]
	if !ok {
		return Value{}, fmt.Errorf("%s: !{%s} refers to undeclared reference %q", path, name, name)
	}
	if value.FromSecret && !s.targetIsSecret {
		return Value{}, fmt.Errorf("%s: reference %q is read from a Secret and may only be injected into a Secret", path, name)
	}
	return value, nil
}

// toText formats a value interpolated into a longer string: a string as it is,
// anything else as compact JSON.
func toText(value interface{}) (string, error) {
	if str, ok := value.(string); ok {
		return str, nil
	}
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	// The text lands in a string, not in HTML: keep <, > and & as they are.
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// deepCopy copies the maps and lists of unstructured content; other values are
// immutable and returned as they are.
func deepCopy(value interface{}) interface{} {
	switch value := value.(type) {
	case map[string]interface{}:
		if value == nil {
			return value
		}
		out := make(map[string]interface{}, len(value))
		for k, v := range value {
			out[k] = deepCopy(v)
		}
		return out
	case []interface{}:
		if value == nil {
			return value
		}
		out := make([]interface{}, len(value))
		for i, v := range value {
			out[i] = deepCopy(v)
		}
		return out
	default:
		return value
	}
}

// child returns the path of a map entry; the object itself, a map, is the nil
// root, so that lists are always under a field.
func child(path *field.Path, key string) *field.Path {
	if path == nil {
		return field.NewPath(key)
	}
	return path.Child(key)
}
