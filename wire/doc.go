// Package wire is the runner's view of Beam's encoded elements.
//
// The runner moves encoded bytes and decodes only what it needs: the
// windowed-value header (timestamp, windows, pane) and, on keyed edges, the
// key's bytes. Values stay opaque. To find where one element ends and the
// next begins without decoding it, wire builds a Measure for a coder from the
// pipeline's coder table; coders the runner does not know are wrapped in
// beam:coder:length_prefix:v1 (see LengthPrefixUnknown) so that their length
// is always on the wire.
//
// Nothing here allocates per element on the hot paths except where a caller
// asks for a copy.
package wire
