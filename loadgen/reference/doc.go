// Package reference holds figures the seed threads published, printed beside ours.
package reference
