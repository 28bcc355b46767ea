package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// The krew manifest (build/krew/limbo.yaml) is a krew-release-bot template.
// Rendered as the bot renders it, it must be a krew Plugin whose every platform
// installs this binary and ships the completion script.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile("../../build/krew/limbo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"
	tmpl, err := template.New("krew").Funcs(template.FuncMap{
		// The bot's function: the archive's URI and its sha256.
		"addURIAndSha": func(uri, tag string) string {
			return fmt.Sprintf("uri: %s\n    sha256: %s", strings.ReplaceAll(uri, "{{ .TagName }}", tag), strings.Repeat("ab", 32))
		},
	}).Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := tmpl.Execute(&rendered, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	var plugin struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Homepage         string `json:"homepage"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				Sha256 string `json:"sha256"`
				Bin    string `json:"bin"`
				Files  []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(rendered.Bytes(), &plugin); err != nil {
		t.Fatalf("%v\n%s", err, rendered.String())
	}
	if plugin.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || plugin.Kind != "Plugin" ||
		plugin.Metadata.Name != "limbo" || plugin.Spec.Version != tag || plugin.Spec.ShortDescription == "" {
		t.Errorf("not the krew Plugin limbo %s: %+v", tag, plugin)
	}
	if len(plugin.Spec.Platforms) == 0 {
		t.Fatal("no platforms")
	}
	// build/dist.sh builds an archive for each platform, and only those.
	dist, err := os.ReadFile("../../build/dist.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`platforms=\$\{DIST_PLATFORMS:-([^}]*)\}`).FindSubmatch(dist)
	if m == nil {
		t.Fatal("build/dist.sh names no default platforms")
	}
	var manifest []string
	for _, p := range plugin.Spec.Platforms {
		manifest = append(manifest, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"])
	}
	if built := strings.Fields(string(m[1])); !slices.Equal(built, manifest) {
		t.Errorf("build/dist.sh builds %v, the manifest lists %v", built, manifest)
	}
	for _, p := range plugin.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		bin, complete := "kubectl-limbo", "kubectl_complete-limbo"
		if os == "windows" { // build/dist.sh: kubectl finds a batch file through PATHEXT
			bin, complete = bin+".exe", complete+".bat"
		}
		files := map[string]bool{}
		for _, f := range p.Files {
			files[f.From] = true
		}
		if p.Bin != bin || !files[bin] || !files[complete] || len(p.Sha256) != 64 ||
			!strings.HasSuffix(p.URI, fmt.Sprintf("/%s/kubectl-limbo_%s_%s_%s.tar.gz", tag, tag, os, arch)) {
			t.Errorf("platform %s/%s: %+v", os, arch, p)
		}
	}
}
