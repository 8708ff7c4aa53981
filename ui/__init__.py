"""The Gradio front end of DropMatch Explorer: one module per tab, on top of dropmatch, dropmatch.lab and viz."""
