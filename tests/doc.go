// Package tests holds end-to-end tests that run the commands on real FUSE mounts.
//
// They build cmd/kernfsim, run it as a subprocess and check it from the
// outside, as a user would: the status line, exit statuses, signals,
// permissions of other users, `kernfsim tree` against what the mount
// serves.
//
// TestImportsKeepTheLayout holds the packages to the layout: no room
// imports one above it.
//
// Tests that need FUSE skip where /dev/fuse is missing or the test does not
// run as root, but fail when the CI environment variable is set.
package tests
