package bench

import (
	"strings"
	"testing"
)

func TestPresetConfig(t *testing.T) {
	for _, c := range []struct {
		name                            string
		bundles, objects, memoryBundles int
		wantErr                         string
	}{
		{name: "default", bundles: 200, objects: 10, memoryBundles: 1000},
		{name: "large", bundles: 1000, objects: 10, memoryBundles: 1000},
		{name: "huge", wantErr: `no preset "huge" (presets: default, large)`},
		{name: "", wantErr: `no preset ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := PresetConfig(c.name)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Preset != c.name || cfg.Bundles != c.bundles || cfg.Objects != c.objects || cfg.MemoryBundles != c.memoryBundles {
				t.Errorf("preset %s = %s %d×%d, memory %d; want %d×%d, memory %d", c.name, cfg.Preset, cfg.Bundles, cfg.Objects, cfg.MemoryBundles, c.bundles, c.objects, c.memoryBundles)
			}
			// Everything but the sizes is DefaultConfig's, and valid.
			def := DefaultConfig()
			if cfg.QPS != def.QPS || cfg.UnthrottledQPS != def.UnthrottledQPS || cfg.Deletions != def.Deletions || !cfg.Memory {
				t.Errorf("preset %s changed more than the sizes: %+v", c.name, cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("preset %s does not validate: %v", c.name, err)
			}
		})
	}
}

func TestDefaultConfigIsTheDefaultPreset(t *testing.T) {
	def, err := PresetConfig(Presets[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if cfg.Preset != def.Preset || cfg.Bundles != def.Bundles || cfg.Objects != def.Objects || cfg.MemoryBundles != def.MemoryBundles {
		t.Errorf("DefaultConfig %+v is not preset %s", cfg, def.Preset)
	}
	if cfg.UnthrottledQPS != 1000 || cfg.UnthrottledBurst != 2000 {
		t.Errorf("unthrottled client %g/%d, want 1000/2000", cfg.UnthrottledQPS, cfg.UnthrottledBurst)
	}
}

func TestValidateUnthrottledAndKro(t *testing.T) {
	for _, c := range []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"unthrottled skipped", func(c *Config) { c.UnthrottledQPS = 0 }, ""},
		{"negative unthrottled QPS", func(c *Config) { c.UnthrottledQPS = -1 }, "-unthrottled-qps"},
		{"unthrottled without burst", func(c *Config) { c.UnthrottledBurst = 0 }, "-unthrottled-burst"},
		{"kro", func(c *Config) { c.KroBin, c.KroCRDs = "bin/kro", "crds" }, ""},
		{"kro without CRDs", func(c *Config) { c.KroBin = "bin/kro" }, "-kro-crds"},
		{"kro without the unthrottled converge", func(c *Config) { c.KroBin, c.KroCRDs, c.UnthrottledQPS = "bin/kro", "crds", 0 }, "-unthrottled-qps > 0"},
		{"kro with shards", func(c *Config) { c.KroBin, c.KroCRDs, c.Shards = "bin/kro", "crds", 2 }, "do not combine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.change(&cfg)
			err := cfg.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Validate = %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}
