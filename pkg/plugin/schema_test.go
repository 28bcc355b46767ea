package plugin_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

type schemaSpec struct {
	Name     string                `json:"name" schema:"minLength=1,maxLength=63"`
	Effect   string                `json:"effect,omitempty" schema:"enum=NoSchedule|NoExecute"`
	Every    *string               `json:"every,omitempty" schema:"duration"`
	Wait     metav1.Duration       `json:"wait" schema:"optional"`
	Count    int32                 `json:"count,omitempty"`
	Ratio    float64               `json:"ratio,omitempty"`
	On       bool                  `json:"on,omitempty"`
	Tags     []string              `json:"tags,omitempty"`
	Labels   map[string]string     `json:"labels,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	Ignored  string                `json:"-"`
	inlined
}

type inlined struct {
	Extra string `json:"extra,omitempty"`
}

// The schema follows encoding/json and the schema tags; it is compared as JSON,
// the form a reader of a CRD knows.
func TestSchemaOf(t *testing.T) {
	got, err := json.Marshal(plugin.SchemaOf[schemaSpec]())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"required":["name"]`,
		`"additionalProperties":false`,
		`"name":{"type":"string","maxLength":63,"minLength":1}`,
		`"effect":{"type":"string","enum":["NoSchedule","NoExecute"]}`,
		`"every":{"type":"string","pattern":"` + strings.ReplaceAll(plugin.DurationPattern, `\`, `\\`) + `"}`,
		`"wait":{"type":"string","pattern"`,
		`"count":{"type":"integer"}`, `"ratio":{"type":"number"}`, `"on":{"type":"boolean"}`,
		`"tags":{"type":"array","items":{"type":"string"}}`,
		`"labels":{"type":"object","additionalProperties":{"type":"string"}}`,
		`"matchExpressions":{"type":"array","items":{"type":"object","required":["key","operator"]`,
		`"extra":{"type":"string"}`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("schema lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "Ignored") || strings.Contains(string(got), "inlined") {
		t.Errorf("schema has a skipped or embedded field's name: %s", got)
	}
}

// A type no JSON schema describes is a programming error, caught at registration.
func TestSchemaOfPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("SchemaOf accepted a map with int keys")
		}
	}()
	plugin.SchemaOf[struct {
		M map[int]string `json:"m"`
	}]()
}
