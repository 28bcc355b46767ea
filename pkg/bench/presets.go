package bench

import (
	"fmt"
	"strings"
)

// Preset is a named workload size: `limbo-bench -preset NAME` (make bench
// BENCH_ARGS="-preset large"); flags given with it override its values.
type Preset struct {
	Name        string
	Description string
	// Bundles × Objects is the converge workload; MemoryBundles the memory
	// phase's.
	Bundles, Objects, MemoryBundles int
}

// Presets are the workloads docs/performance.md reports, the default first.
var Presets = []Preset{
	{Name: "default", Description: "200 Bundles × 10 ConfigMaps; memory at 1,000 × 10", Bundles: 200, Objects: 10, MemoryBundles: 1000},
	{Name: "large", Description: "1,000 Bundles × 10 ConfigMaps in every phase", Bundles: 1000, Objects: 10, MemoryBundles: 1000},
}

// PresetNames lists the presets' names, for flag help and errors.
func PresetNames() string {
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// PresetConfig is DefaultConfig with the workload of the preset name.
func PresetConfig(name string) (Config, error) {
	for _, p := range Presets {
		if p.Name == name {
			cfg := DefaultConfig()
			cfg.Preset = p.Name
			cfg.Bundles, cfg.Objects, cfg.MemoryBundles = p.Bundles, p.Objects, p.MemoryBundles
			return cfg, nil
		}
	}
	return Config{}, fmt.Errorf("no preset %q (presets: %s)", name, PresetNames())
}
