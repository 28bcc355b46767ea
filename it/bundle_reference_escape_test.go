package it

import (
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Two ! before a marker's { are one ! of text: a template can hold the
// characters of a marker (a Pug template's !{html}) without declaring a
// reference, and an odd run still substitutes after the text's !.
func TestEscapedMarkerIsText(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "escape",
		objectResource(t, "db", configMap("db", map[string]any{"host": "db.internal"}, nil)),
		objectResource(t, "page", configMap("page", map[string]any{"page.pug": "p !!{html}", "greeting": "hi!!!{host}"}, nil),
			limbov1alpha1.Reference{Name: "host", Resource: "db", Path: "data.host"}))
	waitReady(t, b)
	page := getObject(t, configMapGVK, ns, "page")
	if got := stringField(page, "data", "page.pug"); got != "p !{html}" {
		t.Errorf("data.page.pug = %q, want %q", got, "p !{html}")
	}
	if got := stringField(page, "data", "greeting"); got != "hi!db.internal" {
		t.Errorf("data.greeting = %q, want %q", got, "hi!db.internal")
	}
}
