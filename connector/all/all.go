// Package all lists weir's connectors: the runner-native transforms it
// runs. A new connector is its own package and one line here.
package all

import (
	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/filesink"
	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/pgsink"
	"github.com/weir-runner/weir/teststream"
)

// registry is built once: the list is fixed in code, so a duplicate URN
// is a programming error, found at start-up.
var registry = connector.MustRegistry(
	kafka.ReadConnector{},
	kafka.WriteConnector{},
	filesink.Connector{},
	pgsink.Connector{},
	teststream.Connector{},
)

// Registry returns weir's connectors.
func Registry() *connector.Registry { return registry }
