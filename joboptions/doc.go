// Package joboptions declares weir's job options, the pipeline options a
// job sets to tune how weir runs it (--weir_checkpoint_interval,
// --weir_combine_lifting, ...), and parses them.
//
// The declaration (All) is the one list of them. Everything about an
// option comes from its entry: the typed field of Options it fills, its
// kind and validation, its default, its description, and whether it names
// a path. From it come
//
//   - Parse, which reads a job's options once, at submission, from the
//     pipeline options struct of any SDK, into Options;
//   - Describe, what the job service's DescribePipelineOptions publishes,
//     so that Python's PortableRunner (which drops any flag the runner does
//     not describe) accepts them;
//   - RegisterFlags, the flags of a Go pipeline run with --runner=weir;
//   - docs/options.md, which a test checks against it.
//
// # Reading a job's options
//
// SDKs send options in a google.protobuf.Struct, in three forms, read in
// this order: beam:option:NAME:v1 (Python, Java), NAME, and the Go SDK's
// beam:option:go_options:v1 {"options": {NAME: "value"}}. Values may be any
// JSON type: Python sends booleans as JSON booleans and floats as numbers
// (its integers as strings, BEAM-5509), Go sends every value as a string.
// A bool option takes a JSON boolean or "true"/"false"; an int option a
// whole JSON number or its decimal text; the others take strings. An empty
// string or null means the option is not set (the Go SDK's way of unsetting
// one). Any other value fails Parse with an *Error naming the option and
// the value, as does an option that starts with weir_ and is not declared
// (a misspelt option would otherwise be ignored in silence).
//
// Parse also reads job_name, the name every SDK gives a job as an option,
// and checks the rules between options (a savepoint needs checkpoints, the
// aligned-timeout mode needs its timeout).
//
// This package imports no part of the runner: cmd/weir, the job service and
// a server's future checks of client-chosen paths (Option.Path) read the
// declaration without the executor.
package joboptions
