import unittest

from greeting import greet_text


class GreetText(unittest.TestCase):
    def test_greets(self):
        self.assertEqual(greet_text("Hi", "Ada"), "Hi, Ada!")


if __name__ == "__main__":
    unittest.main()
