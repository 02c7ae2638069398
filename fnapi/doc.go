// Package fnapi is the runner side of Beam's Fn API: the control, data,
// state, logging and provisioning services that SDK workers connect to, the
// environments that start those workers, and the bundle protocol.
//
// One Server serves one job. The executor asks it for a Worker per
// environment (StartWorker), registers process bundle descriptors with it,
// and runs bundles with Worker.Process: the request goes out on the control
// stream, the input goes out on the data stream in batches of many elements,
// state requests are answered through the bundle's StateHandler, and the
// call returns once the SDK's response and every output's final data frame
// have arrived. Several bundles run on one worker at once. Worker.Split asks
// a bundle in flight (named by BundleRequest.OnSent) to hand back part of
// its input; the residual is then the caller's to run.
//
// Nothing received from a worker is trusted: malformed or unexpected
// messages fail the bundle they belong to, never the process.
package fnapi
