package controllerprocess

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape: a metric name, its labels and its value.
// Histograms and summaries come as their _bucket/_sum/_count (quantile) series,
// as the text format writes them.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples is a scrape of a /metrics endpoint.
type Samples []Sample

// ParseMetrics parses a /metrics body in the Prometheus text format with
// prometheus/common's expfmt.
func ParseMetrics(text string) (Samples, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	return FromFamilies(list)
}

// FromFamilies flattens metric families (a parsed scrape, or what a
// prometheus.Gatherer returns) into samples.
func FromFamilies(families []*dto.MetricFamily) (Samples, error) {
	vector, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, families...)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	out := make(Samples, 0, len(vector))
	for _, v := range vector {
		s := Sample{Labels: make(map[string]string, len(v.Metric)), Value: float64(v.Value)}
		for k, val := range v.Metric {
			if k == model.MetricNameLabel {
				s.Name = string(val)
				continue
			}
			s.Labels[string(k)] = string(val)
		}
		out = append(out, s)
	}
	return out, nil
}

// Sum adds the values of the samples named name whose labels include match
// (a label given as "" must be absent or empty).
func (ss Samples) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range ss {
		if s.Name == name && s.matches(match) {
			total += s.Value
		}
	}
	return total
}

// By sums the samples named name by the values of the labels keys, joined by
// "/".
func (ss Samples) By(name string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = s.Labels[k]
		}
		out[strings.Join(parts, "/")] += s.Value
	}
	return out
}

func (s Sample) matches(match map[string]string) bool {
	for k, v := range match {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}
