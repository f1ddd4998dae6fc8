-- Version 5: the browser agent's memory.
CREATE TABLE browser_placeholder (id integer);
