package controllerprocess

import "testing"

const scrape = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 12
apiserver_request_total{code="201",group="limbo.dev",resource="bundles",subresource="status",verb="PATCH"} 3
weird{msg="a \"quoted\", comma\\ and } brace"} 1.5e+00 1700000000000
go_memstats_heap_alloc_bytes 1.048576e+06
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="bundle",le="0.1"} 3
workqueue_queue_duration_seconds_bucket{name="bundle",le="+Inf"} 4
workqueue_queue_duration_seconds_sum{name="bundle"} 0.9
workqueue_queue_duration_seconds_count{name="bundle"} 4
`

func TestParseMetrics(t *testing.T) {
	s, err := ParseMetrics(scrape)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"apiserver_request_total", map[string]string{"verb": "GET"}, 12},
		{"apiserver_request_total", map[string]string{"subresource": ""}, 12},
		{"apiserver_request_total", nil, 15},
		{"weird", nil, 1.5},
		{"go_memstats_heap_alloc_bytes", nil, 1 << 20},
		{"workqueue_queue_duration_seconds_count", map[string]string{"name": "bundle"}, 4},
		{"workqueue_queue_duration_seconds_sum", map[string]string{"name": "bundle"}, 0.9},
		{"workqueue_queue_duration_seconds_bucket", map[string]string{"le": "0.1"}, 3},
		{"absent", nil, 0},
	} {
		if got := s.Sum(c.name, c.match); got != c.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", c.name, c.match, got, c.want)
		}
	}
	if got := s.By("apiserver_request_total", "verb", "resource"); len(got) != 2 || got["PATCH/bundles"] != 3 || got["GET/configmaps"] != 12 {
		t.Errorf("By = %v", got)
	}
	// By sums the series that share the keys' values: without keys, all of them.
	if got := s.By("apiserver_request_total"); len(got) != 1 || got[""] != 15 {
		t.Errorf("By without keys = %v, want the sum of both series", got)
	}
	for _, smp := range s {
		// The name is the sample's name, not one of its labels.
		if _, ok := smp.Labels["__name__"]; ok || smp.Name == "" {
			t.Errorf("sample %q has labels %v", smp.Name, smp.Labels)
		}
		if smp.Name == "weird" && smp.Labels["msg"] != `a "quoted", comma\ and } brace` {
			t.Errorf("escaped label = %q", smp.Labels["msg"])
		}
	}
}

func TestParseMetricsRejectsMalformedText(t *testing.T) {
	for _, text := range []string{
		`x{a="b} 1`,
		`x{a="b"}`,
		`x 1 2 3`,
		"# TYPE x counter\nx{a=\"b\"} not-a-number",
	} {
		if _, err := ParseMetrics(text); err == nil {
			t.Errorf("ParseMetrics(%q): no error", text)
		}
	}
}
