package restmappings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// countingMapper maps the kinds in served and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	served map[schema.GroupVersionKind]bool
	asked  int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	for _, v := range versions {
		if gvk := gk.WithVersion(v); m.served[gvk] {
			return &meta.RESTMapping{GroupVersionKind: gvk, Resource: schema.GroupVersionResource{Group: gk.Group, Version: v, Resource: "things"}}, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func TestRemembering(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	for _, tc := range []struct {
		name string
		// asks are the versions of each question, in order; later, when set,
		// are the kinds served from the second half of the questions on
		// (before: Widget v1 only).
		asks      [][]string
		later     map[schema.GroupVersionKind]bool
		wantAsked int
		wantErrs  int
	}{
		{name: "the same question, asked once", asks: [][]string{{"v1"}, {"v1"}, {"v1"}}, wantAsked: 1},
		{name: "other versions are other questions", asks: [][]string{{"v1"}, {"v1beta1", "v1"}, {"v1"}, {"v1beta1", "v1"}}, wantAsked: 2},
		{name: "a kind not served is asked again, and remembered once served",
			asks: [][]string{{"v2"}, {"v2"}, {"v2"}, {"v2"}}, later: map[schema.GroupVersionKind]bool{widget.WithVersion("v2"): true},
			wantAsked: 3, wantErrs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delegate := &countingMapper{served: map[schema.GroupVersionKind]bool{widget.WithVersion("v1"): true}}
			r, err := Remember(func() (meta.RESTMapper, error) { return delegate, nil })
			if err != nil {
				t.Fatal(err)
			}
			errs := 0
			for i, versions := range tc.asks {
				if i == len(tc.asks)/2 && tc.later != nil {
					delegate.served = tc.later
				}
				m, err := r.RESTMapping(widget, versions...)
				if err != nil {
					if !meta.IsNoMatchError(err) {
						t.Fatalf("question %d: %v, want the delegate's NoKindMatch", i, err)
					}
					errs++
					continue
				}
				if m.GroupVersionKind.GroupKind() != widget || !slices.Contains(versions, m.GroupVersionKind.Version) {
					t.Errorf("question %d (%v): mapping of %v", i, versions, m.GroupVersionKind)
				}
			}
			if delegate.asked != tc.wantAsked || errs != tc.wantErrs {
				t.Errorf("delegate asked %d times, %d errors; want %d and %d", delegate.asked, errs, tc.wantAsked, tc.wantErrs)
			}
		})
	}
}

// A kind that is no longer served is still mapped, from memory and by a
// delegate that discovered it, until Reset: then a new delegate answers.
func TestRememberingReset(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	served := map[schema.GroupVersionKind]bool{widget.WithVersion("v1"): true}
	var delegates []*countingMapper
	r, err := Remember(func() (meta.RESTMapper, error) {
		// A delegate knows what was served when it was made, as the dynamic
		// mapper knows what it discovered.
		d := &countingMapper{served: maps.Clone(served)}
		delegates = append(delegates, d)
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatalf("served: %v", err)
	}
	delete(served, widget.WithVersion("v1")) // its CRD is deleted
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatalf("before Reset the mapping is remembered, got %v", err)
	}
	r.Reset()
	if _, err := r.RESTMapping(widget, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("after Reset: %v, want NoKindMatch from a new delegate", err)
	}
	if len(delegates) != 2 || delegates[1].asked != 1 {
		t.Errorf("%d delegates made, the new one asked %d times; want 2 and 1", len(delegates), delegates[len(delegates)-1].asked)
	}
	served[widget.WithVersion("v1")] = true // installed again
	r.Reset()
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Errorf("installed again: %v", err)
	}

	// A delegate that cannot be made leaves the old one.
	failing, err := Remember(func() (meta.RESTMapper, error) {
		if len(delegates) > 3 {
			return nil, errors.New("discovery down")
		}
		d := &countingMapper{served: maps.Clone(served)}
		delegates = append(delegates, d)
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	failing.Reset()
	if _, err := failing.RESTMapping(widget, "v1"); err != nil {
		t.Errorf("the old delegate stays when no new one can be made: %v", err)
	}
}

func TestNotServed(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}, true},
		{apierrors.NewNotFound(gr, ""), true},
		{fmt.Errorf("list: %w", apierrors.NewNotFound(gr, "")), true},
		{apierrors.NewForbidden(gr, "", errors.New("no")), false},
		{errors.New("connection refused"), false},
	} {
		if got := NotServed(tc.err); got != tc.want {
			t.Errorf("NotServed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// failingDiscoveryMapper answers every question with err.
type failingDiscoveryMapper struct {
	meta.RESTMapper
	err error
}

func (m failingDiscoveryMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, m.err
}

func (m failingDiscoveryMapper) RESTMappings(schema.GroupKind, ...string) ([]*meta.RESTMapping, error) {
	return nil, m.err
}

// A mapping whose group version's discovery failed is not "not served" while
// the API server lists that group version: an aggregated API whose service is
// unavailable has objects all the same. controller-runtime's mapper words that
// failure as a NoMatch error, as it words a group that is gone; a group the API
// server does not list is gone, and an unanswered listing leaves it unknown.
func TestRememberingDiscoveryFailed(t *testing.T) {
	gk := schema.GroupKind{Group: "route.openshift.io", Kind: "Route"}
	gv := gk.WithVersion("v1").GroupVersion()
	discoveryFailed := func() error {
		return &apiutil.ErrResourceDiscoveryFailed{gv: &meta.NoResourceMatchError{PartialResource: gv.WithResource("")}}
	}
	withRoutes := &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "route.openshift.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "route.openshift.io/v1", Version: "v1"}}}}}
	withOtherVersion := &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "route.openshift.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "route.openshift.io/v2", Version: "v2"}}}}}
	for _, tc := range []struct {
		name          string
		err           error
		groups        *metav1.APIGroupList
		groupsErr     error
		wantNotServed bool
	}{
		{"discovery failed, group version listed", discoveryFailed(), withRoutes, nil, false},
		{"discovery failed, group gone", discoveryFailed(), &metav1.APIGroupList{}, nil, true},
		{"discovery failed, only another version listed", discoveryFailed(), withOtherVersion, nil, true},
		{"discovery failed, listing the groups failed", discoveryFailed(), nil, errors.New("connection refused"), false},
		{"no kind match", &meta.NoKindMatchError{GroupKind: gk}, withRoutes, nil, true},
		{"discovery failed with a 503", &apiutil.ErrResourceDiscoveryFailed{gv: apierrors.NewServiceUnavailable("unavailable")}, &metav1.APIGroupList{}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Remember(func() (meta.RESTMapper, error) { return failingDiscoveryMapper{err: tc.err}, nil })
			if err != nil {
				t.Fatal(err)
			}
			r.Listed = func(gv schema.GroupVersion) (bool, error) {
				if tc.groupsErr != nil {
					return false, tc.groupsErr
				}
				for _, g := range tc.groups.Groups {
					for _, v := range g.Versions {
						if g.Name == gv.Group && v.Version == gv.Version {
							return true, nil
						}
					}
				}
				return false, nil
			}
			_, err = r.RESTMapping(gk, "v1")
			if err == nil || NotServed(err) != tc.wantNotServed {
				t.Errorf("RESTMapping: %v, NotServed %v; want an error, NotServed %v", err, NotServed(err), tc.wantNotServed)
			}
			_, err = r.RESTMappings(gk, "v1")
			if NotServed(err) != tc.wantNotServed {
				t.Errorf("RESTMappings: %v, NotServed %v; want NotServed %v", err, NotServed(err), tc.wantNotServed)
			}
		})
	}
}

// The same against controller-runtime's mapper and client-go's discovery client,
// reading an API server's aggregated discovery in which an aggregated API's
// group version is listed Stale (its service unavailable), then one in which
// only another version is served, then one in which the group is gone.
func TestRememberingStaleAggregatedGroup(t *testing.T) {
	stale, v2Only := true, false
	srv := discoveryServer(t, func() []apidiscoveryv2.APIGroupDiscovery {
		switch {
		case stale:
			return []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: "route.openshift.io"},
				Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessStale}}}}
		case v2Only: // v1 no longer served
			return routesV2Only
		}
		return nil
	})
	cfg := &rest.Config{Host: srv.URL}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Remember(func() (meta.RESTMapper, error) { return apiutil.NewDynamicRESTMapper(cfg, hc) })
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Listed = ListedBy(disco)
	route := schema.GroupKind{Group: "route.openshift.io", Kind: "Route"}
	if _, err := r.RESTMapping(route, "v1"); err == nil || NotServed(err) {
		t.Errorf("stale group version: %v, NotServed %v; want an error that is not NotServed", err, NotServed(err))
	}
	stale, v2Only = false, true
	r.Reset()
	if _, err := r.RESTMapping(route, "v1"); !NotServed(err) {
		t.Errorf("version no longer served: %v, want NotServed", err)
	}
	v2Only = false
	r.Reset()
	if _, err := r.RESTMapping(route, "v1"); !NotServed(err) {
		t.Errorf("group gone: %v, want NotServed", err)
	}
}

// routesV2Only is the aggregated discovery of a group whose v2 alone is served.
var routesV2Only = []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: "route.openshift.io"},
	Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v2", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "routes", ResponseKind: &metav1.GroupVersionKind{Group: "route.openshift.io", Version: "v2", Kind: "Route"}, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"list"}}}}}}}

// discoveryServer is an API server's aggregated discovery: ConfigMaps in the
// core group, and the groups apis returns; apis nil answers every request 503.
func discoveryServer(t *testing.T, apis func() []apidiscoveryv2.APIGroupDiscovery) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var list apidiscoveryv2.APIGroupDiscoveryList
		list.APIVersion, list.Kind = "apidiscovery.k8s.io/v2", "APIGroupDiscoveryList"
		switch {
		case apis == nil:
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		case r.URL.Path == "/api":
			list.Items = []apidiscoveryv2.APIGroupDiscovery{{Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
				Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "configmaps", ResponseKind: &metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"list"}}}}}}}
		case r.URL.Path == "/apis":
			list.Items = apis()
		default:
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// ListedBy says whether the API server lists a group version, served or stale;
// a discovery that fails is an error, never a "not listed" (which would make a
// kind not served, and its objects forgotten).
func TestListedBy(t *testing.T) {
	v1 := schema.GroupVersion{Group: "route.openshift.io", Version: "v1"}
	v2 := schema.GroupVersion{Group: "route.openshift.io", Version: "v2"}
	serving := func() []apidiscoveryv2.APIGroupDiscovery { return routesV2Only }
	for _, tc := range []struct {
		name    string
		apis    func() []apidiscoveryv2.APIGroupDiscovery
		gv      schema.GroupVersion
		want    bool
		wantErr bool
	}{
		{name: "served", apis: serving, gv: v2, want: true},
		{name: "another version of the group", apis: serving, gv: v1},
		{name: "another group", apis: serving, gv: schema.GroupVersion{Group: "apps.openshift.io", Version: "v2"}},
		{name: "discovery failing", gv: v2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disco, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: discoveryServer(t, tc.apis).URL})
			if err != nil {
				t.Fatal(err)
			}
			listed, err := ListedBy(disco)(tc.gv)
			if listed != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("ListedBy(%v) = %v, %v; want %v, an error %v", tc.gv, listed, err, tc.want, tc.wantErr)
			}
		})
	}
}

// Only a NoMatch from a failed discovery is put to Listed: any other error
// (a 503 of the group's discovery) is returned as it is, its meaning kept, and
// without Listed nothing is asked.
func TestRememberingLeavesOtherErrorsAlone(t *testing.T) {
	gv := schema.GroupVersion{Group: "route.openshift.io", Version: "v1"}
	for _, tc := range []struct {
		name   string
		err    error
		listed func(schema.GroupVersion) (bool, error)
	}{
		{name: "discovery failed with a 503", err: &apiutil.ErrResourceDiscoveryFailed{gv: apierrors.NewServiceUnavailable("unavailable")},
			listed: func(schema.GroupVersion) (bool, error) {
				t.Error("Listed asked about a discovery that did not fail with a NoMatch")
				return true, nil
			}},
		{name: "discovery failed, no Listed", err: &apiutil.ErrResourceDiscoveryFailed{gv: &meta.NoResourceMatchError{PartialResource: gv.WithResource("")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Remember(func() (meta.RESTMapper, error) { return failingDiscoveryMapper{err: tc.err}, nil })
			if err != nil {
				t.Fatal(err)
			}
			r.Listed = tc.listed
			if _, err := r.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: "Route"}, gv.Version); err != tc.err {
				t.Errorf("RESTMapping: %v, want the delegate's error as it is", err)
			}
		})
	}
}

// resettingMapper is a delegate whose answer comes after a Reset (a CRD
// deleted while the question was asked): reset is called before it answers.
type resettingMapper struct {
	meta.RESTMapper
	reset func()
}

func (m resettingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.reset()
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// The answer of a delegate that a Reset replaced while it answered is returned
// but not remembered: the next question goes to the new delegate, which may
// know the kind is gone.
func TestRememberingForgetsAnAnswerFromBeforeAReset(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	var r *Remembering
	var made []*countingMapper
	r, err := Remember(func() (meta.RESTMapper, error) {
		d := &countingMapper{served: map[schema.GroupVersionKind]bool{widget.WithVersion("v1"): true}}
		made = append(made, d)
		if len(made) == 1 {
			return resettingMapper{RESTMapper: d, reset: func() { r.Reset() }}, nil
		}
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 || made[1].asked != 1 {
		t.Errorf("%d delegates, the new one asked %d times; want 2 and 1: the old delegate's answer was remembered", len(made), made[len(made)-1].asked)
	}
}
