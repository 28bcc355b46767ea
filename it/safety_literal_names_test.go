package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Names are literal: a reference in metadata.name is a spec error naming the
// resource and the field, and nothing is created (it used to create shop-data,
// track it as "!{app}-data", and delete and re-create it in a loop).
func TestTemplatedNameIsASpecError(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "shop",
		objectResource(t, "app", configMap("shop", map[string]any{"k": "v"}, nil)),
		objectResource(t, "data", configMap("!{app}-data", map[string]any{"k": "v"}, nil),
			limbov1alpha1.Reference{Name: "app", Resource: "app", Path: "metadata.name"}),
	)
	const msg = `object: metadata.name "!{app}-data" must be literal: references (!{…}) and their escapes (!!{…}) are not allowed in an object's name or namespace`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "data", limbov1alpha1.ResourceError, "TemplatedName", msg); err != nil {
			return err
		}
		return conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec")
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, name := range []string{"shop", "shop-data"} {
			if getObject(t, configMapGVK, ns, name) != nil {
				return fmt.Errorf("ConfigMap %s was created from an invalid spec", name)
			}
		}
		return nil
	})
}
