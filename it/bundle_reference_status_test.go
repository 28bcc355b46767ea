package it

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var serviceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Service"}

// A reference to a field of a Ready dependency's status that its controller has
// not written yet — a LoadBalancer Service's ingress, Ready for kstatus once it
// has a cluster IP — waits for it (Blocked, ValueNotSet, the Bundle Progressing),
// rather than reporting an error while the load balancer comes up; once the
// status holds the value, the object is written with it.
func TestReferenceWaitsForStatusField(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	lb := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "lb"},
		"spec": map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{"port": int64(80)}}}}
	ref := limbov1alpha1.Reference{Name: "ip", Resource: "lb", Path: "status.loadBalancer.ingress[0].ip"}
	b := createBundle(t, ns, "lb-address",
		objectResource(t, "lb", lb),
		objectResource(t, "address", configMap("address", map[string]any{"ip": "!{ip}"}, nil), ref),
	)
	msg := `waiting for a value: reference "ip": path "status.loadBalancer.ingress[0].ip" in resource "lb": ingress is not found`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "lb", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "address", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonValueNotSet, msg); err != nil {
			return err
		}
		if err := conditionIs(cur, limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonProgressing); err != nil {
			return err
		}
		return conditionIs(cur, limbov1alpha1.ConditionStalled, metav1.ConditionFalse, limbov1alpha1.ReasonProgressing)
	})
	if err := noObject(configMapGVK, ns, "address")(); err != nil {
		t.Fatalf("written before its value was there: %v", err)
	}

	// The cloud's load balancer controller reports the address.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		svc := getObject(t, serviceGVK, ns, "lb")
		if svc == nil {
			return fmt.Errorf("service lb does not exist")
		}
		svc.Object["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.7"}}}}
		return env.Client.Status().Update(context.Background(), svc)
	})
	waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "address"), "data", "ip"); got != "203.0.113.7" {
		t.Errorf("address data.ip = %q, want the load balancer's 203.0.113.7", got)
	}
}
