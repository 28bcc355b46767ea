package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRDs server-side applies the CustomResourceDefinitions found in paths (YAML
// files, or directories of them), waits until every one is established, and then
// applies the other objects found there (limbo's admission policy for Bundles).
func InstallCRDs(ctx context.Context, cfg *rest.Config, paths ...string) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crds, others, err := readManifests(paths)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner("limbo-dev"), client.ForceOwnership); err != nil { //nolint:staticcheck // typed CRD apply
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var live apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), &live); err != nil {
				return false, nil
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	// Established is not yet discoverable: a client whose REST mapper looks the
	// kind up a moment later can still be told it does not exist.
	if err := waitDiscoverable(ctx, cfg, crds); err != nil {
		return err
	}
	for _, obj := range others {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("limbo-dev"), client.ForceOwnership); err != nil {
			return fmt.Errorf("install %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return waitAdmissible(ctx, c, crds)
}

// waitAdmissible waits until a server-side dry-run create of each CRD's kind is
// not refused as unavailable. A mutating admission policy (limbo's sets a
// Bundle's finalizer) refuses creates of a custom resource with 503 "Resource
// kind ... not found" until the API server has published the CRD's schema to
// it, a few moments after the CRD is established.
func waitAdmissible(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		version := ""
		for _, v := range crd.Spec.Versions {
			if v.Served && (version == "" || v.Storage) {
				version = v.Name
			}
		}
		probe := &unstructured.Unstructured{}
		probe.SetAPIVersion(crd.Spec.Group + "/" + version)
		probe.SetKind(crd.Spec.Names.Kind)
		probe.SetName("localcluster-admission-probe")
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			probe.SetNamespace("default")
		}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			last = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return !apierrors.IsServiceUnavailable(last) && !meta.IsNoMatchError(last), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: creates still refused: %v", crd.Name, last)
		}
	}
	return nil
}

// waitDiscoverable waits until the API server's discovery lists every served
// version of crds.
func waitDiscoverable(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, nil
				}
				for _, r := range list.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s: %s not discoverable: %w", crd.Name, gv, err)
			}
		}
	}
	return nil
}

// readManifests returns the CustomResourceDefinitions in paths, and the other
// objects there in file order.
func readManifests(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, []*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var others []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			switch {
			case len(obj.Object) == 0, obj.GetKind() == "Kustomization":
				continue
			case obj.GetKind() == "CustomResourceDefinition":
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", f, err)
				}
				crds = append(crds, crd)
			default:
				others = append(others, obj)
			}
		}
	}
	if len(crds) == 0 {
		return nil, nil, fmt.Errorf("no CustomResourceDefinitions in %v", paths)
	}
	return crds, others, nil
}
