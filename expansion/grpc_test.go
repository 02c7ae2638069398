package expansion

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	beamkafkaio "github.com/apache/beam/sdks/v2/go/pkg/beam/io/xlang/kafkaio"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weir-runner/weir/kafkaio"
)

// startServer serves a Service on a free localhost port until the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(quietService())
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func toBytes(b []byte) ([]byte, []byte) { return []byte("k"), b }

func init() {
	beam.RegisterFunction(toBytes)
}

// TestBeamKafkaIOExpandsThroughWeir builds the pipelines of Beam's
// TestKafkaIO_BasicReadWrite with Beam's own io/xlang/kafkaio, pointed at
// weir's expansion service, and checks the pipeline the SDK would submit.
func TestBeamKafkaIOExpandsThroughWeir(t *testing.T) {
	addr := startServer(t)

	p, s := beam.NewPipelineWithRoot()
	vals := beam.CreateList(s, [][]byte{[]byte("a"), []byte("b")})
	kvs := beam.ParDo(s, toBytes, vals)
	beamkafkaio.Write(s, addr, "localhost:9092", "topic_w", kvs)
	reads := beamkafkaio.Read(s, addr, "localhost:9092", []string{"topic_r"},
		beamkafkaio.MaxNumRecords(1000),
		beamkafkaio.ConsumerConfigs(map[string]string{"auto.offset.reset": "earliest"}))
	beam.DropKey(s, reads)

	edges, _, err := p.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	// The universal runner does this before submission; it panics if it has
	// artifacts to fetch and cannot.
	xlangx.ResolveArtifacts(context.Background(), edges, nil)
	env, err := graphx.CreateEnvironment(context.Background(), graphx.URNEnvDocker, func(context.Context) string { return "unused" })
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}

	comps := pipe.GetComponents()
	byURN := map[string]*pipepb.PTransform{}
	for _, tr := range comps.GetTransforms() {
		byURN[tr.GetSpec().GetUrn()] = tr
	}
	for _, urn := range []string{ReadWithoutMetadataURN, WriteURN} {
		if _, ok := byURN[urn]; ok {
			t.Errorf("the pipeline still holds Beam's %s", urn)
		}
	}

	read, ok := byURN[kafkaio.ReadURN]
	if !ok {
		t.Fatalf("the pipeline holds no %s", kafkaio.ReadURN)
	}
	rc, err := kafkaio.DecodeRead(read.GetSpec().GetPayload())
	if err != nil {
		t.Fatal(err)
	}
	if rc.BootstrapServers[0] != "localhost:9092" || rc.Topics[0] != "topic_r" || rc.MaxRecords != 1000 || rc.Start != kafkaio.StartEarliest {
		t.Errorf("read config %+v", rc)
	}
	var out string
	for _, id := range read.GetOutputs() {
		out = id
	}
	if !consumed(comps, out) {
		t.Errorf("nothing consumes the read's output %q: the SDK did not rewire DropKey to it", out)
	}

	write, ok := byURN[kafkaio.WriteURN]
	if !ok {
		t.Fatalf("the pipeline holds no %s", kafkaio.WriteURN)
	}
	if wc, err := kafkaio.DecodeWrite(write.GetSpec().GetPayload()); err != nil || wc.Topic != "topic_w" {
		t.Errorf("write config %+v, %v", wc, err)
	}
	for _, in := range write.GetInputs() {
		if !produced(comps, in) {
			t.Errorf("nothing produces the write's input %q", in)
		}
	}
}

func consumed(c *pipepb.Components, pcoll string) bool {
	for _, tr := range c.GetTransforms() {
		if len(tr.GetSubtransforms()) > 0 {
			continue
		}
		for _, in := range tr.GetInputs() {
			if in == pcoll {
				return true
			}
		}
	}
	return false
}

func produced(c *pipepb.Components, pcoll string) bool {
	for _, tr := range c.GetTransforms() {
		if len(tr.GetSubtransforms()) > 0 {
			continue
		}
		for _, out := range tr.GetOutputs() {
			if out == pcoll {
				return true
			}
		}
	}
	return false
}

// TestExpandOverGRPC sends the SDK's requests with its generated client:
// a refusal arrives as ExpansionResponse.Error, not as an RPC failure the SDK
// would retry.
func TestExpandOverGRPC(t *testing.T) {
	conn, err := grpc.NewClient(startServer(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := jobpb.NewExpansionServiceClient(conn)
	ctx := context.Background()

	res, err := client.Expand(ctx, goRequest(ReadWithoutMetadataURN, beam.CrossLanguagePayload(goRead("k:9092", "t")), nil, nil))
	if err != nil || res.GetError() != "" {
		t.Fatalf("Expand = %v, %v", res.GetError(), err)
	}
	if got := res.GetTransform().GetSpec().GetUrn(); got != kafkaio.ReadURN {
		t.Errorf("expanded URN %s, want %s", got, kafkaio.ReadURN)
	}

	res, err = client.Expand(ctx, goRequest("beam:transform:org.apache.beam:kafka_read:v9", nil, nil, nil))
	if err != nil {
		t.Fatalf("Expand: RPC error %v", err)
	}
	if !strings.Contains(res.GetError(), "kafka_read:v9") {
		t.Errorf("error %q does not name the URN", res.GetError())
	}

	if _, err := client.DiscoverSchemaTransform(ctx, &jobpb.DiscoverSchemaTransformRequest{}); err != nil {
		t.Errorf("DiscoverSchemaTransform: %v", err)
	}
}
