//go:build race

package tests

func init() { raceBuild = true }
