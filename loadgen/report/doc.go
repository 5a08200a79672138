// Package report writes loadgen's results as text, JSON and Go benchmark lines.
//
// A run (Result) has WriteSeed (the seed benchmark's format), WriteJSON
// and WriteBench. A comparison (CompareResult) has WriteCompareTable
// (tables with findings), WriteSeedTable (beside seed 002's figures),
// WriteCompareJSON (read back by ReadCompareJSON) and WriteCompareBench.
// Every writer is a function of an io.Writer and a result. A JSON form X
// is made by NewJSONX; the shared types' forms live with the types.
package report
