// Package plugintest holds test helpers that every plugin's tests need, so that
// each plugin package states its cases and not the code that checks them.
package plugintest
