// Package series runs a tool's configurations one after another.
package series
