// Package targets describes what a run measures: the sim, a path, or a kernfsim mount.
package targets
