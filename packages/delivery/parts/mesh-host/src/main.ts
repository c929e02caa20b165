// The host build's entry: the host package's main, which runs the host when it is the file Node
// runs (a launcher starts it with the host's arguments; decision 0200).
import "@mesh/host/main";
