// Package gradefmt holds the few conventions every part of a grade writes numbers and
// foreign text by: Round6 (Python's round(x, 6), so component scores and the fold agree
// with the upstream grader bit for bit), Score (a score in Grade.reasons) and Quote (a
// bounded quote in an error). The grader and its subpackages share them so that one
// score reads the same in every segment.
//
// Imports: the standard library.
package gradefmt
