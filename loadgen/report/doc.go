// Package report writes loadgen's results: a run (Result) in the seed
// benchmark's own format with a summary (WriteSeed), as JSON (WriteJSON)
// and as Go benchmark lines (WriteBench); a comparison (CompareResult) as
// tables with findings (WriteCompareTable), beside seed 002's figures
// (WriteSeedTable), as JSON (WriteCompareJSON, read back by
// ReadCompareJSON) and as benchmark lines (WriteCompareBench). Every
// writer is a function of an io.Writer and a result. A JSON form X is
// made by NewJSONX; the forms of the harness's types are package
// harness's.
package report
