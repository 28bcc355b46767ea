package plugin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// specValidator checks plugin specs against a plugin's schema with kube-openapi's
// validator, the one the API server checks a custom resource with, and reports
// what fails as the API server reports it (spec.name: Required value).
//
// It does not use apiextensions-apiserver's validation package, which wraps the
// same validator: that package brings the API server's feature gates and CEL
// (cel-go, ANTLR) into the controller, whose start-up then costs about 5 MiB of
// resident memory more for checks plugin specs never make (checkSchema refuses
// CEL rules; ratcheting only concerns updates of stored objects).
type specValidator struct {
	validator *validate.SchemaValidator
	schema    *apiextensionsv1.JSONSchemaProps
}

// newSpecValidator builds the validator of schema s. A JSONSchemaProps is an
// OpenAPI v3 schema, so its JSON form is also a kube-openapi spec.Schema.
func newSpecValidator(s *apiextensionsv1.JSONSchemaProps) (*specValidator, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var schema spec.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	return &specValidator{validator: validate.NewSchemaValidator(&schema, nil, "", strfmt.Default), schema: s}, nil
}

// validate checks value, a decoded JSON document found at path.
func (v *specValidator) validate(path *field.Path, value any) field.ErrorList {
	result := v.validator.Validate(value)
	if result.IsValid() {
		return durationErrors(path, v.schema, value)
	}
	var errs field.ErrorList
	for _, err := range result.Errors {
		verr, ok := err.(*openapierrors.Validation)
		if !ok {
			errs = append(errs, field.Invalid(path, "", err.Error()))
			continue
		}
		at := path
		if name := strings.TrimPrefix(verr.Name, "."); name != "" {
			at = path.Child(name)
		}
		var value any = ""
		if verr.Value != nil {
			value = verr.Value
		}
		switch verr.Code() {
		case openapierrors.RequiredFailCode:
			errs = append(errs, field.Required(at, ""))
		case openapierrors.EnumFailCode:
			errs = append(errs, field.NotSupported(at, verr.Value, enumValues(verr.Values)))
		case openapierrors.TooLongFailCode:
			errs = append(errs, field.TooLong(at, "", intOf(verr.Valid)))
		case openapierrors.MaxItemsFailCode, openapierrors.TooManyPropertiesCode:
			errs = append(errs, field.TooMany(at, intOf(verr.Value), intOf(verr.Valid)))
		case openapierrors.InvalidTypeCode:
			errs = append(errs, field.TypeInvalid(at, value, verr.Error()))
		default:
			errs = append(errs, field.Invalid(at, value, verr.Error()))
		}
	}
	sortErrors(errs)
	return errs
}

// sortErrors puts errs in the order of their fields, then of their messages.
// The schema validator finds forbidden properties by walking a map, as label
// validation walks matchLabels, in another order at each call: sorted, the same
// spec always reads the same, which is what keeps the Bundle's condition, and
// so its status and events, still.
func sortErrors(errs field.ErrorList) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Error(), b.Error()))
	})
}

// durationErrors reports the durations in value that match DurationPattern but
// that Go cannot hold ("3000000h" is past time.Duration's 2562047h): the pattern
// cannot bound a number, and without this check such a spec would pass, and fail
// at every pass of the plugin instead, as a plugin error rather than a spec error.
// It runs once the schema is satisfied, so the types along the way are right.
func durationErrors(path *field.Path, s *apiextensionsv1.JSONSchemaProps, value any) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	switch v := value.(type) {
	case string:
		if s.Pattern == DurationPattern {
			if _, err := time.ParseDuration(v); err != nil {
				errs = append(errs, field.Invalid(path, v, fmt.Sprintf("longer than the longest duration, %v", time.Duration(1<<63-1))))
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var child *apiextensionsv1.JSONSchemaProps
			if p, ok := s.Properties[k]; ok {
				child = &p
			} else if s.AdditionalProperties != nil {
				child = s.AdditionalProperties.Schema
			}
			errs = append(errs, durationErrors(path.Child(k), child, v[k])...)
		}
	case []any:
		if s.Items != nil {
			for i, item := range v {
				errs = append(errs, durationErrors(path.Index(i), s.Items.Schema, item)...)
			}
		}
	}
	return errs
}

// enumValues are an enum's allowed values as the API server lists them: strings
// as they are, other values as JSON.
func enumValues(values []any) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if s, ok := v.(string); ok {
			out = append(out, s)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			raw = []byte(fmt.Sprint(v))
		}
		out = append(out, string(raw))
	}
	return out
}

// intOf is a limit or a count from a validation error; -1 when it has none.
func intOf(v any) int {
	if i, ok := v.(int64); ok {
		return int(i)
	}
	return -1
}
