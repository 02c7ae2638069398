package watermarkmgr

import "testing"

func TestManager(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"minimum over inputs", `
			new 3
			input      => -inf
			emit       => -inf unchanged
			advance 0 10
			advance 1 20
			input      => -inf
			advance 2 5
			input      => 5
			emit       => 5 advanced
			emit       => 5 unchanged
			advance 2 30
			emit       => 10 advanced
			advance 0 40
			input      => 20
			emit       => 20 advanced
		`},
		{"an input's watermark only moves forward", `
			new 2
			advance 0 20
			advance 1 20
			emit       => 20 advanced
			advance 0 10
			input      => 20
			advance 1 30
			input      => 20
			emit       => 20 unchanged
			advance 0 25
			emit       => 25 advanced
		`},
		{"idle input left out of the minimum", `
			new 3
			advance 0 10
			advance 1 3
			advance 2 20
			emit       => 3 advanced
			idle 1
			input      => 10
			emit       => 10 advanced
			idle 1
			allidle    => false
			advance 0 15
			emit       => 15 advanced
		`},
		{"idle input counted again on data, without regressing", `
			new 2
			advance 0 10
			advance 1 3
			idle 1
			advance 0 20
			emit       => 20 advanced
			# input 1 is back at 3: it pins the input watermark at 20
			active 1
			input      => 20
			advance 0 30
			input      => 20
			emit       => 20 unchanged
			advance 1 25
			input      => 25
			emit       => 25 advanced
		`},
		{"idle input counted again on a watermark behind", `
			new 2
			advance 0 10
			idle 1
			emit       => 10 advanced
			advance 1 5
			input      => 10
			advance 0 50
			input      => 10
			advance 1 12
			input      => 12
			emit       => 12 advanced
		`},
		{"idle input counted again on a watermark ahead", `
			new 2
			advance 0 10
			idle 1
			advance 1 100
			input      => 10
			advance 0 200
			input      => 100
		`},
		{"every input idle: the input watermark stays", `
			new 2
			advance 0 10
			advance 1 20
			idle 0
			input      => 20
			idle 1
			allidle    => true
			input      => 20
			emit       => 20 advanced
			# back, but behind: no regression
			advance 0 15
			allidle    => false
			input      => 20
			advance 0 30
			input      => 30
		`},
		{"every input idle from the start", `
			new 2
			idle 0
			idle 1
			input      => -inf
			emit       => -inf unchanged
			active 1
			input      => -inf
			advance 1 7
			input      => 7
		`},
		{"holds", `
			new 1
			advance 0 100
			hold a 50
			hold b 70
			output     => 50
			emit       => 50 advanced
			release a  => true
			output     => 70
			hold b 60
			output     => 60
			emit       => 60 advanced
			hold b 90
			hold c 80
			emit       => 80 advanced
			release c  => true
			release c  => false
			emit       => 90 advanced
			release b  => true
			emit       => 100 advanced
			release b  => false
		`},
		{"a hold added before emit counts", `
			new 1
			advance 0 10
			hold h 5
			emit       => 5 advanced
			advance 0 20
			emit       => 5 unchanged
			hold h 30
			emit       => 20 advanced
		`},
		{"a hold behind the emitted output does not pull it back", `
			new 2
			advance 0 10
			advance 1 10
			emit       => 10 advanced
			hold late 3
			output     => 10
			emit       => 10 unchanged
			advance 0 20
			advance 1 20
			emit       => 10 unchanged
			release late => true
			emit       => 20 advanced
		`},
		{"a hold above the input watermark does not lift the output", `
			new 1
			advance 0 10
			hold h 50
			emit       => 10 advanced
			advance 0 60
			emit       => 50 advanced
		`},
		{"end of input", `
			new 2
			advance 0 10
			end 1
			input      => 10
			emit       => 10 advanced
			end 0
			input      => +inf
			emit       => +inf advanced
			emit       => +inf unchanged
		`},
		{"an ended input no longer holds the minimum", `
			new 3
			advance 0 50
			advance 2 40
			end 1
			input      => 40
			end 2
			input      => 50
		`},
		{"end while idle", `
			new 2
			advance 0 10
			idle 1
			end 1
			allidle    => false
			input      => 10
			idle 0
			allidle    => true
			end 0
			allidle    => false
			input      => +inf
		`},
		{"the last live input idle after the others end", `
			new 2
			idle 0
			end 1
			allidle    => true
			input      => -inf
			advance 0 8
			input      => 8
		`},
		{"holds keep the output after every input ends", `
			new 1
			hold pending 30
			end 0
			input      => +inf
			emit       => 30 advanced
			release pending => true
			emit       => +inf advanced
		`},
		{"events after end and on unknown inputs are errors", `
			new 2
			end 0
			advance 0 20 => error: watermarkmgr: event after end of input: input 0
			end 0        => error
			idle 0       => error
			active 0     => error
			advance 2 0  => error: watermarkmgr: input 2 out of range [0, 2)
			advance -1 0 => error
			input        => -inf
		`},
		{"no inputs: the output is the minimum hold", `
			new 0
			input      => +inf
			hold split 10
			emit       => 10 advanced
			hold split 20
			emit       => 20 advanced
			release split => true
			emit       => +inf advanced
		`},
	} {
		t.Run(tc.name, func(t *testing.T) { runScript(t, tc.script) })
	}
}

func TestInputWatermark(t *testing.T) {
	m := New(2)
	if err := m.Advance(1, 7); err != nil {
		t.Fatal(err)
	}
	if err := m.End(0); err != nil {
		t.Fatal(err)
	}
	if _, live := m.InputWatermark(0); live {
		t.Error("an ended input reports a watermark")
	}
	if wm, live := m.InputWatermark(1); !live || wm != 7 {
		t.Errorf("input 1: %v, %v; want 7, true", wm, live)
	}
	if _, live := m.InputWatermark(2); live {
		t.Error("an input out of range reports a watermark")
	}
}
