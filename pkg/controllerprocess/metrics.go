package controllerprocess

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Sample is one line of a Prometheus text exposition: a metric name, its labels and
// its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples is a scrape of a /metrics endpoint.
type Samples []Sample

// ParseMetrics parses the Prometheus text format (version 0.0.4): comments and
// blank lines are skipped, timestamps ignored.
func ParseMetrics(text string) (Samples, error) {
	var out Samples
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		sample, err := parseSample(s)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w: %q", line, err, s)
		}
		out = append(out, sample)
	}
	return out, sc.Err()
}

func parseSample(s string) (Sample, error) {
	sample := Sample{Labels: map[string]string{}}
	end := strings.IndexAny(s, "{ \t")
	if end <= 0 {
		return sample, fmt.Errorf("no value")
	}
	sample.Name, s = s[:end], s[end:]
	if s[0] == '{' {
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " ,")
			if s == "" {
				return sample, fmt.Errorf("unterminated labels")
			}
			if s[0] == '}' {
				s = s[1:]
				break
			}
			eq := strings.IndexByte(s, '=')
			if eq <= 0 || len(s) < eq+2 || s[eq+1] != '"' {
				return sample, fmt.Errorf("bad label")
			}
			name := strings.TrimSpace(s[:eq])
			s = s[eq+2:]
			var value strings.Builder
			closed := false
			for i := 0; i < len(s); i++ {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						value.WriteByte('\n')
					default:
						value.WriteByte(s[i])
					}
					continue
				}
				if c == '"' {
					s = s[i+1:]
					closed = true
					break
				}
				value.WriteByte(c)
			}
			if !closed {
				return sample, fmt.Errorf("unterminated label value")
			}
			sample.Labels[name] = value.String()
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return sample, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return sample, err
	}
	sample.Value = v
	return sample, nil
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

// Has reports whether any sample is named name.
func (ss Samples) Has(name string) bool {
	for _, s := range ss {
		if s.Name == name {
			return true
		}
	}
	return false
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
