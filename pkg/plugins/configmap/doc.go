// Package configmap is the smallest useful plugin, and the example of how to write
// one (docs/plugins/writing-a-plugin.md): a Smith-style generator that turns its
// spec into one ConfigMap, which limbo then treats exactly like an `object`
// resource (applied, owned, watched, deleted when it leaves the Bundle).
//
//   - name: settings
//     plugin:
//     name: configmap
//     spec: {name: app-settings, data: {LOG_LEVEL: info}, prefix: APP_}
package configmap
