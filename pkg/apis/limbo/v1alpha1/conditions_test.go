package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionsSetter is the shape Flux's condition helpers (runtime/conditions) use.
type conditionsSetter interface {
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

func TestBundleConditions(t *testing.T) {
	var obj conditionsSetter = &Bundle{}
	conditions := obj.GetConditions()
	meta.SetStatusCondition(&conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady})
	obj.SetConditions(conditions)
	if c := meta.FindStatusCondition(obj.(*Bundle).Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonReady {
		t.Errorf("Ready condition after SetConditions = %+v", c)
	}
}
