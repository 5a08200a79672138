// Package provenance records the build, machine and command line of a run.
package provenance
