// Package uninstall tells whether limbo is being uninstalled: one of its own
// CRDs is being deleted. The API server then deletes every Bundle and
// Tombstone in background, as if a user had deleted each: read as such, every
// Bundle would be torn down (its objects without a delay deleted, deorbit
// run) and every Tombstone executed as forced — an application, and its
// external items, gone with the tool that deployed them. The controllers take
// such a deletion for what it is: limbo leaving, which deletes nothing.
package uninstall

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The names of limbo's CRDs whose deletion is an uninstall.
var (
	BundlesCRD    = "bundles." + limbov1alpha1.GroupVersion.Group
	TombstonesCRD = "tombstones." + limbov1alpha1.GroupVersion.Group
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Going reports which of the CRDs names is being deleted ("" if none), read
// from r — the API server, not a cache: the CRD's deletion reaches a watch no
// sooner than the deletions of its objects that the API server starts at
// once. A CRD not found is not being deleted: its objects, which the caller
// acts on, do not outlive it. Any other error is returned, and the caller
// decides nothing on it.
func Going(ctx context.Context, r client.Reader, names ...string) (string, error) {
	for _, name := range names {
		found, deleting, err := read(ctx, r, name)
		if err != nil {
			return "", err
		}
		if found && deleting {
			return name, nil
		}
	}
	return "", nil
}

// Gone reports whether the CRD name is gone or being deleted, read from r (the
// API server): a 404 for the LIST of its kind is then the kind's end, not a
// moment's (an API server that has just started answers 404 for a custom
// resource kind until it has loaded its CRDs).
func Gone(ctx context.Context, r client.Reader, name string) (bool, error) {
	found, deleting, err := read(ctx, r, name)
	return err == nil && (!found || deleting), err
}

// read reads the CRD name's metadata from r.
func read(ctx context.Context, r client.Reader, name string) (found, deleting bool, err error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdGVK)
	switch err := r.Get(ctx, client.ObjectKey{Name: name}, crd); {
	case apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("read CRD %s, whose deletion would mean limbo is being uninstalled: %w", name, err)
	}
	return true, crd.DeletionTimestamp != nil, nil
}
