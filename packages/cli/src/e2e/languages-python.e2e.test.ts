/** examples/modules/hello-python on a real mesh: the suite of testing/languages-suite.ts. */
import { languageSuite } from "../testing/languages-suite.js";

languageSuite("python");
