package demo

import "testing"

// TestSets: the test split has 10,000 rows, the validation split 5,000,
// both of the ten CIFAR-10 classes.
func TestSets(t *testing.T) {
	test, val, err := Sets()
	if err != nil {
		t.Fatal(err)
	}
	if test.N != 10000 || val.N != 5000 || test.K != len(Classes) || val.K != len(Classes) {
		t.Errorf("test n %d K %d, val n %d K %d", test.N, test.K, val.N, val.K)
	}
	if _, err := Load("train"); err == nil {
		t.Error("unknown split accepted")
	}
}
