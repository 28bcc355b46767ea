package controller_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

const dashboardPath = "../../build/deploy/monitoring/dashboard.json"

// Every metric the Grafana dashboard queries is one the controller exports: its
// name is registered on the registry that the controller's /metrics serves.
func TestDashboardMetricsAreExported(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatal(err)
	}
	queried := map[string][]string{} // metric name -> where
	for _, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			if maxOfTotals(target.Expr) {
				t.Errorf("panel %q: %q takes the max of per-process totals; sum them (one series per shard)", p.Title, target.Expr)
			}
			names := metricNames(target.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, target.Expr)
			}
			for _, name := range names {
				queried[name] = append(queried[name], "panel "+p.Title)
			}
		}
	}
	for _, v := range dashboard.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			queried[m[1]] = append(queried[m[1]], "variable "+v.Name)
		}
	}
	if len(queried) == 0 {
		t.Fatal("the dashboard queries no metric")
	}
	// What a teardown released is in no Bundle's status: only the engine's own
	// count shows it.
	if _, ok := queried["limbo_pending_deletions"]; !ok {
		t.Error("no panel shows limbo_pending_deletions, the only count of the objects the reaper holds")
	}
	expectExported(t, queried)
}

// expectExported fails t for each metric of queried (name -> where it is
// queried) that the controller does not export.
func expectExported(t *testing.T, queried map[string][]string) {
	t.Helper()
	// /metrics serves controller-runtime's registry: controller-runtime's own
	// metrics, registered when its packages are imported, and limbo's, which the
	// manager registers when it is built (here on a registry of their own).
	limbos := prometheus.NewRegistry()
	registerAll(t, limbos)
	// (Probing a registry leaves a trace of the probe's name in it: limbo's names
	// are probed only on limbo's registry, so that TestImportingRegistersNothing
	// can probe controller-runtime's.)
	exported := func(name string) bool {
		if strings.HasPrefix(name, "limbo_") {
			return registered(limbos, name)
		}
		return registered(ctrlmetrics.Registry, name)
	}
	if exported("limbo_no_such_metric") {
		t.Fatal("the probe finds a metric that does not exist")
	}
	for name, where := range queried {
		if !exported(name) && !exported(histogramName(name)) {
			t.Errorf("%s (queried by %s) is not exported by the controller", name, strings.Join(where, ", "))
		}
	}
}

// maxOfTotals reports a `max by` of expr whose labels name no single object
// (bundle or tombstone). Every shard's leader exports its own totals
// (limbo_bundle_resources, workqueue_depth): a max over them shows the larger
// shard's, not the install's. Only series of one object, which one process
// exports at a time, may be taken by max.
func maxOfTotals(expr string) bool {
	for _, by := range maxBy.FindAllStringSubmatch(expr, -1) {
		if labels := strings.Split(by[1], ","); !slices.ContainsFunc(labels, func(l string) bool {
			l = strings.TrimSpace(l)
			return l == "bundle" || l == "tombstone"
		}) {
			return true
		}
	}
	return false
}

const rulesPath = "../../build/deploy/monitoring/prometheusrule.yaml"

// Every alert of the shipped PrometheusRule queries metrics the controller
// exports, takes no max of per-process totals, says what to look at, and has a
// severity; LimboNoLeader also fires with no replica at all (absent).
func TestAlertRulesQueryExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("kind %q, want PrometheusRule", rule.Kind)
	}
	queried := map[string][]string{}
	alerts := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r.Expr
			if maxOfTotals(r.Expr) {
				t.Errorf("alert %s: %q takes the max of per-process totals; sum them (one series per shard)", r.Alert, r.Expr)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: wants a severity label, a summary and a description", r.Alert)
			}
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("alert %s: no metric in %q", r.Alert, r.Expr)
			}
			for _, name := range names {
				queried[name] = append(queried[name], "alert "+r.Alert)
			}
		}
	}
	for _, want := range []string{"LimboNoLeader", "LimboDeletionsFailing", "LimboDeletionOverdue"} {
		if _, ok := alerts[want]; !ok {
			t.Errorf("no alert %s", want)
		}
	}
	if !strings.Contains(alerts["LimboNoLeader"], "absent(") {
		t.Errorf("LimboNoLeader %q does not fire with every replica down (no series: absent)", alerts["LimboNoLeader"])
	}
	expectExported(t, queried)
}

var maxBy = regexp.MustCompile(`max by \(([^)]*)\)`)

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (namespace) (max by (namespace, bundle) (limbo_bundle_pending_deletions{namespace=~"$namespace"}))`: "limbo_bundle_pending_deletions",
		`histogram_quantile(0.99, sum by (le) (rate(limbo_deletion_lateness_seconds_bucket[$__rate_interval])))`:    "limbo_deletion_lateness_seconds_bucket",
		`sort(max without (pod) (a_seconds) - time()) / on (x) group_left (y) b_total offset 5m`:                    "a_seconds b_total",
		`rate(x_total[5m]) > bool 0 and y{l="a(b)"}`:                                                                "x_total y",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

var (
	labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	// What is not a metric name: strings, label matchers, ranges, numbers and
	// durations, and the label lists of grouping and vector matching.
	notNames = []*regexp.Regexp{
		regexp.MustCompile(`"(\\.|[^"\\])*"`),
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\[[^\]]*\]`),
		regexp.MustCompile(`\b[0-9][0-9a-zA-Z_.]*`),
		regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	}
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords   = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects, sorted:
// the identifiers that are not functions (followed by a parenthesis),
// keywords, labels or strings.
func metricNames(expr string) []string {
	for _, re := range notNames {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, id := range identifier.FindAllString(expr, -1) {
		if strings.HasSuffix(id, "(") || slices.Contains(keywords, strings.ToLower(id)) {
			continue
		}
		names = append(names, id)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// histogramName is the histogram or summary a series name belongs to.
func histogramName(series string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok {
			return base
		}
	}
	return series
}

// registered tells whether reg has a metric named name, whatever its labels:
// registering a probe of that name then fails.
func registered(reg prometheus.Registerer, name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
	err := reg.Register(probe)
	if err == nil {
		reg.Unregister(probe)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	return errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name")
}

// The per-object metrics name the Bundle's namespace in their own label
// `namespace`; the Prometheus operator adds the target's (limbo-system) under
// the same name, and without honorLabels Prometheus keeps its own and renames
// limbo's to exported_namespace: the dashboard's namespace variable, its
// per-namespace panel and every `max by (namespace, bundle)` would see
// limbo-system alone, merging same-named Bundles of different tenants.
func TestPodMonitorKeepsTheMetricsNamespace(t *testing.T) {
	raw, err := os.ReadFile("../../build/deploy/monitoring/podmonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var monitor struct {
		Spec struct {
			PodMetricsEndpoints []struct {
				Port        string `json:"port"`
				HonorLabels bool   `json:"honorLabels"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &monitor); err != nil {
		t.Fatal(err)
	}
	if len(monitor.Spec.PodMetricsEndpoints) == 0 {
		t.Fatal("the PodMonitor has no endpoint")
	}
	for _, e := range monitor.Spec.PodMetricsEndpoints {
		if !e.HonorLabels {
			t.Errorf("endpoint %q: honorLabels false: the metrics' namespace label would become exported_namespace", e.Port)
		}
	}
}
