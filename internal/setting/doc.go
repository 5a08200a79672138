// Package setting names configuration fields in text for users.
//
// Libraries write messages that name a field as {Field}. A command turns
// each into its own flag with one Names table (TestNamesPut).
package setting
