// `npm start`: serve with the configuration from the environment and flags.
import { serve } from './serve.js';

void serve(process.argv.slice(2));
