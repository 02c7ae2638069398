package contain

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func boom() { panic("boom") }

// TestCallReturnsThePanicWithItsStack: the error names the value and a
// frame of the function that panicked.
func TestCallReturnsThePanicWithItsStack(t *testing.T) {
	err := Call(func() error { boom(); return nil })
	var p *PanicError
	if !errors.As(err, &p) || p.Value != "boom" {
		t.Fatalf("Call = %v, want the panic", err)
	}
	if !strings.Contains(err.Error(), "panic: boom") || !strings.Contains(err.Error(), "contain.boom") {
		t.Errorf("error lacks the value or the panicking frame:\n%v", err)
	}
	if err := Call(func() error { return io.EOF }); err != io.EOF {
		t.Errorf("Call of a function that returns EOF = %v", err)
	}
}

// TestInterceptorsAnswerInternal: a panicking handler's request answers
// Internal naming the method, and OnPanic hears of it with the stack.
func TestInterceptorsAnswerInternal(t *testing.T) {
	var heard []string
	on := func(_ context.Context, method string, p *PanicError) {
		heard = append(heard, method+" "+p.Error())
	}
	_, err := UnaryServer(on)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/Unary"},
		func(context.Context, any) (any, error) { boom(); return nil, nil })
	checkInternal(t, err, "/s/Unary")
	err = StreamServer(on)(nil, nil, &grpc.StreamServerInfo{FullMethod: "/s/Stream"},
		func(any, grpc.ServerStream) error { boom(); return nil })
	checkInternal(t, err, "/s/Stream")
	if len(heard) != 2 || !strings.Contains(heard[0], "contain.boom") || !strings.HasPrefix(heard[1], "/s/Stream panic: boom") {
		t.Errorf("OnPanic heard %q", heard)
	}
	_, err = UnaryServer(on)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/Fine"},
		func(context.Context, any) (any, error) { return nil, io.EOF })
	if err != io.EOF {
		t.Errorf("a handler's own error became %v", err)
	}
}

func checkInternal(t *testing.T, err error, method string) {
	t.Helper()
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), method) || !strings.Contains(err.Error(), "panic: boom") {
		t.Errorf("%s: %v, want Internal naming the method and the panic", method, err)
	}
}

// TestHTTP: a panic before the response began answers 500; one after it
// began aborts the response; the handler's own abort passes through; a
// streaming handler still finds Flush.
func TestHTTP(t *testing.T) {
	var heard atomic.Int32
	on := func(*http.Request, *PanicError) { heard.Add(1) }
	mux := http.NewServeMux()
	mux.HandleFunc("/early", func(http.ResponseWriter, *http.Request) { boom() })
	mux.HandleFunc("/late", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "half")
		w.(http.Flusher).Flush()
		boom()
	})
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the wrapper: %v", err)
		}
	})
	srv := httptest.NewServer(HTTP(mux, on))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/early")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("/early: %d, want 500", resp.StatusCode)
	}
	if resp, err := http.Get(srv.URL + "/late"); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("/late: a whole response (status %d), want one cut short", resp.StatusCode)
		}
	}
	if _, err := http.Get(srv.URL + "/abort"); err == nil {
		t.Errorf("/abort answered")
	}
	resp, err = http.Get(srv.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("/ok: %q", b)
	}
	if heard.Load() != 2 {
		t.Errorf("heard of %d panics, want 2 (early, late; not the handler's own abort)", heard.Load())
	}
}
