//go:build race

package kernfsim

// raceBuild is set under the race detector, whose sync.Pool drops a share
// of what is put back, so allocation counts are not the real program's.
const raceBuild = true
