package bundlespec

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// TestParseMetadataTypes: metadata of the wrong type is an InvalidObject error
// naming the field. unstructured's getters read it as absent (GetAnnotations
// and GetLabels return nil when one value is not a string), which hid limbo's
// marks from the spec checks and let limbo's own labels and the Bundle's
// namespace replace the template's. A null field is absent, as the API server
// reads it.
func TestParseMetadataTypes(t *testing.T) {
	invalid := limbov1alpha1.ReasonInvalidObject
	cases := []struct {
		name     string
		metadata string // the template's metadata, JSON
		wantErrs []Error
	}{
		{
			name:     "controller-only annotations behind a number",
			metadata: `{"name":"a","annotations":{"limbo.dev/deletionTimestamp":"2020-01-01T00:00:00Z","limbo.dev/released":"x","limbo.dev/deletionDelay":"-5m","n":1}}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.annotations["n"] must be a string, not a number`}},
		},
		{
			name:     "pending-deletion label behind a number",
			metadata: `{"name":"a","labels":{"limbo.dev/pending-deletion":"true","n":1}}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.labels["n"] must be a string, not a number`}},
		},
		{
			name:     "every offending value, in key order",
			metadata: `{"name":"a","labels":{"z":true,"a":"ok","b":{"x":"y"},"c":null},"annotations":{"n":[1]}}`,
			wantErrs: []Error{
				{"r", invalid, `object: metadata.labels["b"] must be a string, not an object`},
				{"r", invalid, `object: metadata.labels["c"] must be a string, not null`},
				{"r", invalid, `object: metadata.labels["z"] must be a string, not a boolean`},
				{"r", invalid, `object: metadata.annotations["n"] must be a string, not a list`},
			},
		},
		{
			name:     "labels not a map",
			metadata: `{"name":"a","labels":["limbo.dev/pending-deletion"]}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.labels must be a map of strings, not a list`}},
		},
		{
			name:     "annotations not a map",
			metadata: `{"name":"a","annotations":"limbo.dev/deletionTimestamp"}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.annotations must be a map of strings, not a string`}},
		},
		{
			name:     "namespace not a string (was replaced by the Bundle's)",
			metadata: `{"name":"a","namespace":7}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.namespace must be a string, not a number`}},
		},
		{
			name:     "name not a string (was reported as missing)",
			metadata: `{"name":{"x":"a"}}`,
			wantErrs: []Error{{"r", invalid, `object: metadata.name must be a string, not an object`}},
		},
		{
			name:     "metadata not an object",
			metadata: `"a"`,
			wantErrs: []Error{
				{"r", invalid, `object: metadata must be an object, not a string`},
				{"r", invalid, `object: metadata.name is required`},
			},
		},

		// Valid.
		{name: "string maps", metadata: `{"name":"a","labels":{"app":"shop"},"annotations":{"limbo.dev/deletionDelay":"1h","n":"1"}}`},
		{name: "null labels and annotations are absent", metadata: `{"name":"a","labels":null,"annotations":null,"namespace":null}`},
		{name: "empty maps", metadata: `{"name":"a","labels":{},"annotations":{}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"apiVersion":"v1","kind":"ConfigMap","metadata":` + tc.metadata + `}`
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
				Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "r", Object: &runtime.RawExtension{Raw: []byte(raw)}}}}}
			plan, errs := Parse(b, mapper(), catalog{})
			if fmt.Sprint([]Error(errs)) != fmt.Sprint(tc.wantErrs) {
				t.Fatalf("errors:\n got %v\nwant %v", []Error(errs), tc.wantErrs)
			}
			if len(tc.wantErrs) == 0 && plan == nil {
				t.Fatal("no plan for a valid spec")
			}
			if len(tc.wantErrs) > 0 && plan != nil {
				t.Error("an invalid spec must yield no plan")
			}
		})
	}
}

// TestJoinBounded: a list joined into a condition or event message stays
// within MessageBudget: the longest run of whole first items that fits, then
// "… and N more" for the rest; only a first item too long alone is cut (at a
// rune boundary, marked "…"). A list that fits is joined as strings.Join does.
func TestJoinBounded(t *testing.T) {
	items := func(n int, format string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return out
	}
	long := strings.Repeat("é", MessageBudget) // 2 bytes a rune
	more := regexp.MustCompile(`… and ([0-9]+) more$`)
	cases := []struct {
		name  string
		items []string
		sep   string
		// want is the exact result; wantCut the start and end of a first item cut.
		want               string
		wantCut            [2]string
		wantKept, wantLeft int // whole items kept and left out, when want is ""
	}{
		{name: "none", items: nil, sep: "; ", want: ""},
		{name: "short list unchanged", items: []string{"a", "b", "c"}, sep: "; ", want: "a; b; c"},
		{name: "exactly the budget", items: []string{strings.Repeat("x", MessageBudget)}, sep: ", ", want: strings.Repeat("x", MessageBudget)},
		{name: "3000 errors", items: items(3000, `resource "a%04d": object: no matches for kind "Widget" in version "example.com/v1"`), sep: "; ", wantKept: 97, wantLeft: 2903},
		{name: "1000 names", items: items(1000, "ConfigMap cm-%d"), sep: ", ", wantKept: 460, wantLeft: 540},
		{name: "second item too long", items: []string{"a", long, "c"}, sep: "; ", want: "a; … and 2 more"},
		{name: "one item too long alone is cut", items: []string{long}, sep: "; ", wantCut: [2]string{"éé", "é…"}},
		{name: "first item too long, more follow", items: []string{long, "b", "c"}, sep: "; ", wantCut: [2]string{"éé", "é…; … and 2 more"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := JoinBounded(tc.items, tc.sep)
			if len(got) > MessageBudget {
				t.Errorf("%d bytes, over the budget of %d", len(got), MessageBudget)
			}
			if !utf8.ValidString(got) {
				t.Error("not valid UTF-8: a rune was split")
			}
			switch {
			case tc.wantCut[0] != "":
				if !strings.HasPrefix(got, tc.wantCut[0]) || !strings.HasSuffix(got, tc.wantCut[1]) {
					t.Errorf("got %.40q … %q, want %q … %q", got, got[max(0, len(got)-40):], tc.wantCut[0], tc.wantCut[1])
				}
			case tc.wantKept > 0:
				m := more.FindStringSubmatch(got)
				if m == nil || m[1] != fmt.Sprint(tc.wantLeft) {
					t.Fatalf("got …%q, want it to end with … and %d more", got[max(0, len(got)-80):], tc.wantLeft)
				}
				tail := tc.sep + m[0]
				if want := strings.Join(tc.items[:tc.wantKept], tc.sep) + tail; got != want {
					t.Errorf("got …%q, want the first %d items whole, then %q", got[max(0, len(got)-80):], tc.wantKept, tail)
				}
				// The longest run that fits: one more item would not.
				oneMore := strings.Join(tc.items[:tc.wantKept+1], tc.sep) + fmt.Sprintf("%s… and %d more", tc.sep, tc.wantLeft-1)
				if len(oneMore) <= MessageBudget {
					t.Errorf("%d items kept, but %d fit (%d bytes)", tc.wantKept, tc.wantKept+1, len(oneMore))
				}
			default:
				if got != tc.want {
					t.Errorf("got %.200q, want %.200q", got, tc.want)
				}
			}
		})
	}
}

// TestErrorsBounded: specs with thousands of problems give bounded errors, for
// the InvalidSpec event and the Ready and Stalled conditions (a condition's
// message is at most 32768 characters: an unbounded one made every status
// write of the Bundle fail), while a short list reads as before.
func TestErrorsBounded(t *testing.T) {
	bundle := func(templates ...string) *limbov1alpha1.Bundle {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}
		for i, tmpl := range templates {
			b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: fmt.Sprintf("r%d", i), Object: &runtime.RawExtension{Raw: []byte(tmpl)}})
		}
		return b
	}
	var markers strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&markers, "!{undeclared-%d}", i)
	}
	var widgets []string
	for i := range 500 {
		widgets = append(widgets, fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w%d"}}`, i))
	}
	cases := []struct {
		name     string
		b        *limbov1alpha1.Bundle
		wantErrs int
		// wantStart and wantEnd are the start and end of Errors.Error().
		wantStart, wantEnd string
	}{
		{name: "3000 undeclared markers", b: bundle(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"` + markers.String() + `"}}`),
			wantErrs: 1, wantStart: `resource "r0": uses undeclared references: !{undeclared-0}, !{undeclared-1}, `, wantEnd: `}, … and 2898 more`},
		{name: "500 templates of an uninstalled CRD", b: bundle(widgets...),
			wantErrs: 500, wantStart: `resource "r0": object: no matches for kind "Widget" in version "example.com/v1"; resource "r1": `, wantEnd: `"; … and 401 more`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse(tc.b, mapper(), catalog{})
			if len(errs) != tc.wantErrs {
				t.Fatalf("%d errors, want %d: %.300v", len(errs), tc.wantErrs, errs)
			}
			msg := errs.Error()
			if len(msg) > MessageBudget {
				t.Errorf("Errors.Error() is %d bytes, over the budget of %d", len(msg), MessageBudget)
			}
			if !strings.HasPrefix(msg, tc.wantStart) || !strings.HasSuffix(msg, tc.wantEnd) {
				t.Errorf("Errors.Error() = %.120q … %q, want %q … %q", msg, msg[max(0, len(msg)-60):], tc.wantStart, tc.wantEnd)
			}
		})
	}

	short := Errors{{"a", "R", "one"}, {"b", "R", "two"}}
	if got, want := short.Error(), `resource "a": one; resource "b": two`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
