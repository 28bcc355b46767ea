package bundle

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// foldStringData moves a Secret's stringData into its data, base64-encoded, as the
// API server does when it stores the Secret (a key in both takes the stringData
// value). limbo applies the folded form because the API server keeps no
// stringData: an apply that sets stringData.b owns a field that never exists, so
// the next apply without b removes nothing and data.b stays
// (kubernetes/kubernetes#108008) — a credential taken out of the Bundle would
// stay in the Secret. Applied as data, the key is limbo's field and goes with it.
//
// An object that is not a v1 Secret, or whose stringData is not a map of strings,
// is left as it is: the API server judges the latter and its answer is the error
// the user sees.
func foldStringData(obj *unstructured.Unstructured) {
	if obj.GetAPIVersion() != "v1" || obj.GetKind() != "Secret" {
		return
	}
	raw, ok := obj.Object["stringData"]
	if !ok {
		return
	}
	stringData, ok := raw.(map[string]any)
	if !ok {
		return
	}
	for _, v := range stringData {
		if _, ok := v.(string); !ok {
			return
		}
	}
	data, ok := obj.Object["data"].(map[string]any)
	if !ok {
		if obj.Object["data"] != nil {
			return
		}
		data = make(map[string]any, len(stringData))
	}
	for k, v := range stringData {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v.(string)))
	}
	delete(obj.Object, "stringData")
	if len(data) > 0 {
		obj.Object["data"] = data
	}
}
