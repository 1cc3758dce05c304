/* uncovered.h — rows of the op table ("Op@since", "domain:Op@since") that have no
 * case yet (coverage.c), one a line: a list that may only shrink. Empty: every
 * row has a case. A change that adds a row adds its case with it; listing the
 * row here instead is a stopgap to say so in its review. */
