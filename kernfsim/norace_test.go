//go:build !race

package kernfsim

// raceBuild is set under the race detector (see race_test.go).
const raceBuild = false
