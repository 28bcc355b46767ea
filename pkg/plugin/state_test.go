package plugin_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

func stateRequest(uid types.UID, resource string) plugin.Request {
	return plugin.Request{Bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{UID: uid}}, Resource: resource}
}

// Forget drops every resource state of one Bundle, and only of that Bundle (a UID
// that another begins with is another Bundle); a forgotten resource starts afresh.
func TestResourceStatesForget(t *testing.T) {
	s := plugin.ResourceStates[int]{New: func() *int { return new(int) }}
	*s.Of(stateRequest("a", "x")) = 1
	*s.Of(stateRequest("a", "y")) = 2
	*s.Of(stateRequest("ab", "x")) = 3
	s.Forget("a")
	if v := *s.Of(stateRequest("ab", "x")); v != 3 {
		t.Errorf("Bundle ab's state = %d, want 3: forgetting a touched it", v)
	}
	for _, resource := range []string{"x", "y"} {
		if v := *s.Of(stateRequest("a", resource)); v != 0 {
			t.Errorf("Bundle a's state of %s after Forget = %d, want a fresh 0", resource, v)
		}
	}
}

// ForgetResource drops one resource's state of one Bundle.
func TestResourceStatesForgetResource(t *testing.T) {
	s := plugin.ResourceStates[int]{New: func() *int { return new(int) }}
	*s.Of(stateRequest("a", "x")) = 1
	*s.Of(stateRequest("a", "y")) = 2
	s.ForgetResource("a", "x")
	if v := *s.Of(stateRequest("a", "y")); v != 2 {
		t.Errorf("a/y = %d after forgetting a/x, want 2", v)
	}
	if v := *s.Of(stateRequest("a", "x")); v != 0 {
		t.Errorf("a/x after ForgetResource = %d, want a fresh 0", v)
	}
}

// forgetfulPlugin records the Bundles and resources it is told to forget.
type forgetfulPlugin struct {
	fakePlugin
	forgot *[]string
}

func (f forgetfulPlugin) ForgetBundle(uid types.UID) { *f.forgot = append(*f.forgot, string(uid)) }
func (f forgetfulPlugin) ForgetResource(uid types.UID, resource string) {
	*f.forgot = append(*f.forgot, string(uid)+"/"+resource)
}

// The registry tells the plugins that keep state (Forgetters) of a Bundle or a
// resource that is gone, and no others.
func TestRegistryForget(t *testing.T) {
	var forgot []string
	r := newRegistry(t, forgetfulPlugin{fakePlugin: named("stateful"), forgot: &forgot}, named("stateless"))
	r.ForgetBundle("u1")
	r.ForgetResource("u2", "gc")
	if len(forgot) != 2 || forgot[0] != "u1" || forgot[1] != "u2/gc" {
		t.Errorf("forgotten = %v, want [u1 u2/gc]", forgot)
	}
	var none *plugin.Registry
	none.ForgetBundle("u2") // a controller without plugins
	none.ForgetResource("u2", "gc")
}

// Drop is given each state forgotten, by Forget and by ForgetResource, once, and
// no state that stays.
func TestResourceStatesDrop(t *testing.T) {
	var dropped []int
	s := plugin.ResourceStates[int]{New: func() *int { return new(int) }, Drop: func(v *int) { dropped = append(dropped, *v) }}
	*s.Of(stateRequest("a", "x")) = 1
	*s.Of(stateRequest("a", "y")) = 2
	*s.Of(stateRequest("b", "x")) = 3
	s.ForgetResource("a", "x")
	s.ForgetResource("a", "x") // already forgotten: nothing to drop
	if !slices.Equal(dropped, []int{1}) {
		t.Errorf("dropped %v after ForgetResource(a, x), want [1]", dropped)
	}
	s.Forget("a")
	if !slices.Equal(dropped, []int{1, 2}) {
		t.Errorf("dropped %v after Forget(a), want [1 2]", dropped)
	}
	if v := *s.Of(stateRequest("b", "x")); v != 3 {
		t.Errorf("b/x = %d, want 3: forgetting a touched it", v)
	}
}
